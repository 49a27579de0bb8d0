"""hermes-sandbox's public surface: its public subpackages and what each exports, pinned.

Changing a list here is a deliberate change of the package's API; other packages import
only these names and the root's (``tests/test_import_graph.py``), and the root's
``__all__`` is pinned in ``test_api.py``. Checks in ``tests/exported_members.py``.
"""

from __future__ import annotations

import importlib

import pytest

from hermes_sandbox import SandboxError
from tests.exported_members import export_problems, exported_errors, public_subpackages

#: Exceptions that are signals, not errors: a conformance check raises ``CheckSkipped``
#: to say it does not apply (catching ``SandboxError`` must not swallow it).
SIGNALS = {"CheckSkipped"}

#: Every public subpackage (no part of its name starts with ``_``) and its ``__all__``.
SUBPACKAGES: dict[str, list[str]] = {
    "hermes_sandbox.backends": [],
    "hermes_sandbox.backends.cloud": [],
    "hermes_sandbox.backends.docker": [
        "BUSYBOX_IMAGE",
        "CONDITIONS",
        "DEFAULT_CPUS",
        "DEFAULT_IMAGE",
        "DEFAULT_PIDS_LIMIT",
        "LABEL",
        "LABEL_POOL",
        "LABEL_RUN",
        "LABEL_TASK",
        "LIFETIME_GRACE",
        "RUN_ID",
        "Condition",
        "ContainerSpec",
        "DockerDaemon",
        "DockerImageOptions",
        "DockerSandbox",
        "DockerUnreachableError",
        "DockerWarmPool",
        "Healthcheck",
        "ImageBuildError",
        "ServiceGroup",
        "ServiceSpec",
        "build_dockerfile_image",
        "build_image",
        "ensure_image",
        "image_exists",
        "list_containers",
        "pull_image",
        "remove_containers",
        "remove_networks",
        "resolve_docker_host",
        "service_order",
        "start_container",
    ],
    "hermes_sandbox.backends.jobs": [],
    "hermes_sandbox.backends.local": [
        "DEFAULT_PATH",
        "DEFAULT_TMP_SIZE_MB",
        "ISOLATION_MODES",
        "MARKER_VARIABLE",
        "Isolation",
        "LocalSandbox",
        "is_stateless",
        "reap_orphans",
    ],
    "hermes_sandbox.testing": [
        "CAPABILITIES",
        "CHECKS",
        "LIMITS",
        "Bench",
        "Check",
        "CheckOutcome",
        "CheckResult",
        "CheckSkipped",
        "ConformanceError",
        "ConformanceReport",
        "Factory",
        "Provider",
        "run_check",
        "run_conformance",
    ],
    "hermes_sandbox.testing.checks": [
        "CHECKS",
        "Bench",
        "Check",
    ],
    "hermes_sandbox.tools": [
        "CHROMIUM_FLAGS",
        "DEFAULT_CHROMIUM",
        "TOOLSETS",
        "BrowserPageError",
        "BrowserUnavailableError",
        "ChromiumBrowser",
        "DirectWebProvider",
        "FirecrawlProvider",
        "Invocation",
        "InvocationLike",
        "SandboxSource",
        "SandboxTool",
        "SearchMatch",
        "SearchResult",
        "TavilyProvider",
        "ToolHandler",
        "WebPage",
        "WebProvider",
        "WebProviderError",
        "WebSearchResult",
        "browser_tools",
        "browser_unavailable",
        "file_tools",
        "patch_file",
        "read_lines",
        "sandbox_tools",
        "search_files",
        "terminal_tools",
        "web_provider_from_env",
        "web_tools",
        "write_text",
    ],
    "hermes_sandbox.tools.web": [
        "DEFAULT_MAX_PAGE_CHARS",
        "MAX_EXTRACT_URLS",
        "MAX_SEARCH_RESULTS",
        "DirectWebProvider",
        "FirecrawlProvider",
        "TavilyProvider",
        "WebPage",
        "WebProvider",
        "WebProviderError",
        "WebProviderErrorKind",
        "WebSearchResult",
        "check_url",
        "extract_web",
        "html_to_text",
        "search_web",
        "web_provider_from_env",
        "web_tools",
    ],
}


def test_the_public_subpackages_are_pinned() -> None:
    assert public_subpackages("hermes_sandbox") == sorted(SUBPACKAGES)


@pytest.mark.parametrize("module", sorted(SUBPACKAGES))
def test_each_subpackage_exports_its_pinned_names(module: str) -> None:
    assert importlib.import_module(module).__all__ == SUBPACKAGES[module]


@pytest.mark.parametrize("module", ["hermes_sandbox", *sorted(SUBPACKAGES)])
def test_exports_resolve_and_nothing_public_is_left_out(module: str) -> None:
    assert export_problems(module) == []


@pytest.mark.parametrize("module", ["hermes_sandbox", *sorted(SUBPACKAGES)])
def test_every_exported_error_is_under_the_package_root(module: str) -> None:
    for error in [e for e in exported_errors(module) if e.__name__ not in SIGNALS]:
        assert issubclass(error, SandboxError), f"{module}.{error.__name__}"
