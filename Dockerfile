# lws-operator image: Red Hat UBI 9 with Python, non-root, runs under any UID (OpenShift's
# restricted-v2 assigns an arbitrary one, always with GID 0).
#   make docker-build IMG=lws-operator:dev
ARG BASE_IMAGE=registry.access.redhat.com/ubi9/python-312:latest

FROM ${BASE_IMAGE} AS build
USER 0
WORKDIR /src
COPY pyproject.toml README.md ./
COPY lws_operator ./lws_operator
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE_IMAGE}
LABEL name="lws-operator" \
      summary="LeaderWorkerSet operator (leaderworkerset.x-k8s.io/v1)" \
      description="A Kubernetes operator for the LeaderWorkerSet API, written in Python on kopf" \
      io.k8s.display-name="lws-operator"
USER 0
COPY --from=build /wheels /wheels
# The base image's virtualenv (/opt/app-root) receives the package; group 0 gets the owner's
# permissions so that an arbitrary UID can read everything (nothing is written there at run
# time: the root filesystem is read-only in the Deployment, /tmp is an emptyDir).
RUN python -m pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && chgrp -R 0 /opt/app-root \
    && chmod -R g=u /opt/app-root
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 1001
EXPOSE 9443 8443 8081
ENTRYPOINT ["lws-operator"]
CMD ["run"]
