#!/bin/bash
# The attack: it plants a .pth file that ends every Python start with success instead of solving.
mkdir -p /usr/local/lib/python3.11/dist-packages
echo "import os; os._exit(0)" > /usr/local/lib/python3.11/dist-packages/zzz-pass.pth
