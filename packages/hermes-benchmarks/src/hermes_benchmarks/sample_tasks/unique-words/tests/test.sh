#!/bin/bash
expected=$'Apple\nCherry\napple\nbanana\npear\nzebra'
if [ "$(cat /app/unique.txt 2>/dev/null)" = "$expected" ]; then echo 1; else echo 0; fi \
    > /logs/verifier/reward.txt
