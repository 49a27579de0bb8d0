#!/bin/bash
# The agent worked as "agent" (it could not read root's file); the tests run as root.
if [ "$(cat /app/who.txt)" = agent ] && [ ! -e /app/secret.txt ] && [ "$(whoami)" = root ] \
    && [ -r /root/secret.txt ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo "who=$(cat /app/who.txt 2>/dev/null) secret=$(ls /app/secret.txt 2>&1) tests-as=$(whoami)"
    echo 0 > /logs/verifier/reward.txt
fi
