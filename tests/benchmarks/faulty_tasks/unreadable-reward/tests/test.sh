#!/bin/bash
# A verifier that writes something that is not a number.
echo "passed-ish" > /logs/verifier/reward.txt
