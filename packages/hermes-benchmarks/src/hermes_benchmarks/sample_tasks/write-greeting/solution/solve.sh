#!/bin/bash
echo 'hello, world' > /app/greeting.txt
