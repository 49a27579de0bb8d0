#!/bin/bash
if pytest /tests/test_answer.sh; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
