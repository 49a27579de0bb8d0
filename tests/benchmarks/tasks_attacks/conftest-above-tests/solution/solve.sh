#!/bin/bash
# The attack: it plants a conftest.py above the tests that deselects them all instead of solving.
printf 'def pytest_collection_modifyitems(items):\n    items.clear()\n' > /conftest.py
