[ "$(cat /app/answer.txt 2>/dev/null)" = solved ]
