#!/bin/bash
if grep -qx solved /app/answer.txt; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
