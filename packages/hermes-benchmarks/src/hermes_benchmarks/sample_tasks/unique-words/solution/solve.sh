#!/bin/bash
tr ' ' '\n' < /app/words.txt | grep -v '^$' | LC_ALL=C sort -u > /app/unique.txt
