#!/bin/bash
# Stops at the first failing check without a reward, as many real verifiers do: harbor
# counts that as 0.
set -e
grep -qx 'mode=fast' /app/config.ini
grep -qx 'workers=4' /app/config.ini
echo 1 > /logs/verifier/reward.txt
