"""What container runtimes and orchestrators say about containers that started and ended:
Kubernetes (`kubectl describe pod`, `kubectl get events`, pod JSON/YAML) and docker (`docker
events`, `docker inspect`, `docker ps -a`), read into lifecycle events with the job (pod or
container) and attempt (restart count) where the output gives them.

`events` holds what the readers share (rows, relative ages anchored to a known time, the frame);
`documents` finds a JSON or YAML document inside a paste. Each reader also reads the same output
inside a terminal session (the transcript loader hands it the command's output and time).
"""

from . import docker, kubernetes

__all__ = ["docker", "kubernetes"]
