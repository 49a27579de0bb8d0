# Run by the image's pytest stand-in (bash).
[ "$(cat /app/answer.txt 2>/dev/null)" = solved ]
