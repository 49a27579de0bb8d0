#!/bin/bash
# The tests reach the service too, as harbor's do.
expected=$(exec 3<>/dev/tcp/api-server/5000 && head -n 1 <&3)
if [ -n "$expected" ] && [ "items: $(cat /app/count.txt 2>/dev/null)" = "$expected" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
