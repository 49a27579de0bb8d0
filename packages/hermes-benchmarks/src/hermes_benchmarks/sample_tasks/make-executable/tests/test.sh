#!/bin/bash
ok=1
[ -x /app/tool/run.sh ] || ok=0
[ "$(readlink -f /usr/local/bin/run-tool)" = "/app/tool/run.sh" ] || ok=0
[ "$(PATH=/usr/local/bin:/usr/bin:/bin run-tool 2>/dev/null)" = "tool ok" ] || ok=0
echo "$ok" > /logs/verifier/reward.txt
