# GENERATED from image.yaml by `make dockerfile` (python -m lws_testbed.imagespec): edit that
# file, not this one; a unit test fails when they drift. The test bed's local builder makes the
# same image from the same description on Debian (make e2e-images).
# lws-operator image: Red Hat UBI 9 with Python, non-root, runs under any UID (OpenShift's
# restricted-v2 assigns an arbitrary one, always with GID 0).
#   make docker-build IMG=lws-operator:dev
ARG BASE_IMAGE=registry.access.redhat.com/ubi9/python-312:latest

FROM ${BASE_IMAGE} AS build
USER 0
WORKDIR /src
COPY pyproject.toml ./
COPY README.md ./
COPY lws_operator ./lws_operator
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE_IMAGE}
LABEL name="lws-operator" \
      summary="LeaderWorkerSet operator (leaderworkerset.x-k8s.io/v1)" \
      description="A Kubernetes operator for the LeaderWorkerSet API, written in Python on kopf" \
      io.k8s.display-name="lws-operator"
USER 0
COPY --from=build /wheels /wheels
# The virtualenv /opt/app-root receives the package; group 0 gets the owner's permissions so that
# an arbitrary UID can read everything (nothing is written there at run time: the root
# filesystem is read-only in the Deployment, /tmp is an emptyDir).
RUN ([ -x /opt/app-root/bin/python ] || python3 -m venv /opt/app-root) \
    && /opt/app-root/bin/python -m pip install --no-cache-dir --no-index --find-links /wheels \
        /wheels/lws_operator-*.whl \
    && rm -rf /wheels \
    && chgrp -R 0 /opt/app-root \
    && chmod -R g=u /opt/app-root
ENV PATH="/opt/app-root/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    PYTHONDONTWRITEBYTECODE="1" \
    PYTHONUNBUFFERED="1" \
    HOME="/tmp"
WORKDIR /opt/app-root
USER 1001
EXPOSE 9443 8443 8081
ENTRYPOINT ["/opt/app-root/bin/lws-operator"]
CMD ["run"]
