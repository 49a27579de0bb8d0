#!/bin/bash
# Several sums, negative numbers included, so a hard-coded 5 does not pass.
ok=1
for pair in "2 3 5" "10 -4 6" "0 0 0" "-7 -8 -15" "123 877 1000"; do
    set -- $pair
    [ "$(bash /app/sum.sh "$1" "$2" 2>/dev/null)" = "$3" ] || ok=0
done
echo "$ok" > /logs/verifier/reward.txt
