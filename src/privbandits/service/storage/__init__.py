"""Durable state of a deployment shared by the server and the shuffler: the deployment id that
keys a database to its state directory (:mod:`.deployment`), and the checks that a database did not
disappear or change under a running process."""

from privbandits.service.storage.deployment import (
    DeploymentError,
    check_database_file,
    default_state_dir,
    resolve_deployment,
    sqlite_path,
)

__all__ = [
    "DeploymentError",
    "check_database_file",
    "default_state_dir",
    "resolve_deployment",
    "sqlite_path",
]
