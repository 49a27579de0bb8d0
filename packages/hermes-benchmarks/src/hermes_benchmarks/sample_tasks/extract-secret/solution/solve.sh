#!/bin/bash
set -e
mkdir -p /tmp/x && tar -C /tmp/x -xzf /app/bundle.tar.gz
cat "$(find /tmp/x -name secret.txt | head -n1)" > /app/answer.txt
