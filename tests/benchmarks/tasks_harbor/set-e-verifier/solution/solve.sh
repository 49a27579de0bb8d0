#!/bin/bash
printf 'mode=fast\nworkers=4\n' > /app/config.ini
