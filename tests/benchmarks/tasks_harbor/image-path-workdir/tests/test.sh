#!/bin/bash
# Needs the image's PATH (report) and its WORKDIR (a relative data.txt).
if [ "$(pwd)" = /root ] && [ "$(cat /root/report.txt 2>/dev/null)" = "$(report data.txt)" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
