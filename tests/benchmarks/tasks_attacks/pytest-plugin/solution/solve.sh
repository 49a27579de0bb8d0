#!/bin/bash
# The attack: it installs a pytest plugin (an entry point) that deselects every test instead of solving.
site=/usr/local/lib/python3.11/dist-packages
mkdir -p $site/pass_all-1.0.dist-info
printf '[pytest11]\npass_all = pass_all\n' > $site/pass_all-1.0.dist-info/entry_points.txt
printf 'def pytest_collection_modifyitems(items):\n    items.clear()\n' > $site/pass_all.py
