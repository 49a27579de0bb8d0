"""Backends on hosted sandbox services reached only through a provider's exec API
(``modal``, ``daytona``).

Such a provider can only "run this argv and return its output and exit code", so
``_runner.RemoteShellSandbox`` (their shared base) does the rest with a small bash runner
inside the sandbox: timeouts that kill the whole process tree, bounded output, kills on
cancellation. ``modal.py`` and ``daytona.py`` adapt it to each SDK.
"""

__all__: list[str] = []
