#!/bin/bash
# [verifier.env] names the folder; [environment.env] reaches the tests too.
if [ "$(cat "$EXPECTED_DIR/name.txt" 2>/dev/null)" = hermes ] && [ "$PROJECT" = hermes ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
