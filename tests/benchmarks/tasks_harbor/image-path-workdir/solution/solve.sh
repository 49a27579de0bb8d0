#!/bin/bash
# Relative paths and a bare tool name: the image's WORKDIR and PATH.
report data.txt > report.txt
