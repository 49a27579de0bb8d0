#!/bin/bash
# Runs in a fresh sandbox holding only the kept artifacts.
if [ "$(cat /app/sum.txt 2>/dev/null)" = 55 ] && [ -s /logs/artifacts/notes.txt ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
