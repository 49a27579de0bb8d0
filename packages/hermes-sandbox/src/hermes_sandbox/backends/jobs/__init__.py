"""Backends that run each command as a bash job over a pipe to a host they do not own
(``ssh``, ``singularity``).

Both start every command through ``bash -c BOOT`` (its own process group, the sandbox's
marker) on a channel or an ``apptainer exec``, read its reports and output while it runs,
and kill what it left with the scripts of ``hermes_sandbox._processes``: ``_job.py`` holds
what they share (``run_job``, ``JobLedger``), ``ssh.py`` and ``singularity.py`` each
backend.
"""

__all__: list[str] = []
