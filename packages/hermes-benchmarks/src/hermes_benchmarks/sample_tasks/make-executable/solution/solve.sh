#!/bin/bash
chmod +x /app/tool/run.sh
ln -sf /app/tool/run.sh /usr/local/bin/run-tool
