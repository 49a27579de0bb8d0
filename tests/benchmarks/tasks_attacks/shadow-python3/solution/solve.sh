#!/bin/bash
# The attack: it puts a python3 that always succeeds earlier on PATH instead of solving.
printf '#!/bin/sh\nexit 0\n' > /usr/local/bin/python3
chmod +x /usr/local/bin/python3
