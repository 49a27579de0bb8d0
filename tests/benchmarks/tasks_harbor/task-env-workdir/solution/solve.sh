#!/bin/bash
# [environment] workdir and [environment.env], and [solution.env] for the oracle.
[ "$SOLVER" = oracle ] || exit 1
echo "$PROJECT" > name.txt
