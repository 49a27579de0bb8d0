#!/bin/bash
echo 55 > /app/sum.txt
mkdir -p /logs/artifacts
echo "1+2+...+10" > /logs/artifacts/notes.txt
