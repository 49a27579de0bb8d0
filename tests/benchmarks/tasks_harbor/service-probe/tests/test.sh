#!/bin/bash
# Probes the server the agent left running.
answer=$(exec 3<>/dev/tcp/127.0.0.1/7070 && head -n 1 <&3)
if [ "$answer" = pong ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
