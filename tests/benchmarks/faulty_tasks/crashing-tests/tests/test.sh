#!/bin/bash
# A verifier that dies before writing any reward: a verifier failure, never the model's 0.
echo "test harness exploded" >&2
exit 3
