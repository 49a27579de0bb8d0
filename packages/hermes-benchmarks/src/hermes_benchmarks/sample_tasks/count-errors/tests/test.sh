#!/bin/bash
# Three lines have level ERROR; the INFO line that mentions ERROR does not count.
answer="$(tr -d '[:space:]' < /app/answer.txt 2>/dev/null)"
if [ "$answer" = "3" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
