#!/usr/bin/env python3
"""Checks what `helm template` rendered from deploy/helm/streaming-hub.

    helm template hub deploy/helm/streaming-hub [-f values] > rendered.yaml
    python3 deploy/helm/check-rendered.py rendered.yaml [--production]

Each rendered Deployment must carry its role (STREAMING_HUB_ROLE), the probes
(/healthz, /readyz), resources, and its secrets by reference (secretKeyRef,
never a literal value); ingest pods their Kafka instance id from the pod name
(STREAMING_HUB_KAFKA_INSTANCE_ID, static group membership); the migrations Job must be a pre-install/pre-upgrade
hook running `streaming-hub migrate`; each role has a PodDisruptionBudget and
there is a Service. --production also requires what examples/production.yaml
sets: TLS and SASL to Kafka, a CA by reference, OTLP export. --all-on requires
what deploy/ci/helm-all-on.yaml turns on: a ServiceMonitor on /metrics, a
PrometheusRule carrying the alerts of files/prometheus/alerts.yaml, an HPA
(autoscaling/v2) on the delivery Deployment (which then sets no replicas),
an Ingress (networking.k8s.io/v1) to the Service, the extra volumes mounted
in every hub pod and the migrations Job, extraEnv and extraEnvFrom, and
OTEL_EXPORTER_OTLP_HEADERS from a Secret. Without it, none of those kinds
may be rendered (they are off by default). Prints one line per problem and
exits 1 if there is any.
"""
import os
import sys

import yaml

SECRET_VARS = {
    "STREAMING_HUB_KEK", "STREAMING_HUB_KEK_PREVIOUS", "STREAMING_HUB_ADMIN_TOKEN",
    "STREAMING_HUB_DATABASE_URL", "STREAMING_HUB_POSTGRES_DSN",
    "STREAMING_HUB_KAFKA_SASL_USERNAME", "STREAMING_HUB_KAFKA_SASL_PASSWORD",
    "STREAMING_HUB_KAFKA_SCRAM_USERNAME", "STREAMING_HUB_KAFKA_SCRAM_PASSWORD",
    "STREAMING_HUB_KAFKA_CA_CERT", "STREAMING_HUB_KAFKA_TLS_CERT", "STREAMING_HUB_KAFKA_TLS_KEY",
}
REQUIRED_SECRETS = ["STREAMING_HUB_KEK", "STREAMING_HUB_ADMIN_TOKEN", "STREAMING_HUB_DATABASE_URL"]

problems = []


def problem(msg):
    problems.append(msg)


def env_of(container):
    return {e["name"]: e for e in container.get("env") or []}


def check_secret_refs(where, env, names):
    for name in names:
        e = env.get(name)
        if e is None:
            problem(f"{where}: {name} is missing")
            continue
        ref = (e.get("valueFrom") or {}).get("secretKeyRef") or {}
        if not ref.get("name") or not ref.get("key"):
            problem(f"{where}: {name} is not taken from a Secret (secretKeyRef name and key)")
    for name, e in env.items():
        if name in SECRET_VARS and "value" in e:
            problem(f"{where}: {name} has a literal value; secrets go by reference")


def value(env, name):
    e = env.get(name)
    return None if e is None else e.get("value")


def check_all_on(docs, deployments, jobs, optional):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind, api in optional.items():
        got = by_kind.get(kind, [])
        if len(got) != 1:
            problem(f"{len(got)} {kind}s rendered, want 1")
        elif got[0]["apiVersion"] != api:
            problem(f"{kind}: apiVersion {got[0]['apiVersion']}, want {api}")
    for sm in by_kind.get("ServiceMonitor", []):
        eps = sm["spec"].get("endpoints") or []
        if not eps or eps[0].get("port") != "http" or eps[0].get("path") != "/metrics":
            problem("ServiceMonitor: does not scrape port http, path /metrics")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "streaming-hub", "files", "prometheus", "alerts.yaml")) as f:
        want_alerts = sorted(r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r)
    for pr in by_kind.get("PrometheusRule", []):
        got = sorted(r.get("alert") for g in pr["spec"].get("groups") or [] for r in g.get("rules") or [] if "alert" in r)
        if got != want_alerts or not got:
            problem(f"PrometheusRule: alerts {got}, want those of files/prometheus/alerts.yaml {want_alerts}")
    delivery = [d for d in deployments.values() if d["metadata"]["name"].endswith("-delivery")]
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        ref = hpa["spec"]["scaleTargetRef"]
        if ref.get("kind") != "Deployment" or not delivery or ref.get("name") != delivery[0]["metadata"]["name"]:
            problem(f"HorizontalPodAutoscaler: scales {ref}, want the delivery Deployment")
    for d in delivery:
        if "replicas" in d["spec"]:
            problem(f"Deployment {d['metadata']['name']}: sets replicas although an HPA scales it")
    services = [s["metadata"]["name"] for s in by_kind.get("Service", [])]
    for ing in by_kind.get("Ingress", []):
        for rule in ing["spec"].get("rules") or []:
            for path in rule["http"]["paths"]:
                if path["backend"]["service"]["name"] not in services:
                    problem(f"Ingress: path {path['path']} goes to {path['backend']['service']['name']}, not the Service")
    pods = [(f"Deployment {n}", d["spec"]["template"]["spec"]) for n, d in deployments.items()]
    pods += [(f"Job {j['metadata']['name']}", j["spec"]["template"]["spec"]) for j in jobs]
    for where, spec in pods:
        c = spec["containers"][0]
        if "pg-ca" not in [v["name"] for v in spec.get("volumes") or []]:
            problem(f"{where}: extraVolumes not in its volumes")
        if "pg-ca" not in [m["name"] for m in c.get("volumeMounts") or []]:
            problem(f"{where}: extraVolumeMounts not mounted")
    for name, d in deployments.items():
        c = d["spec"]["template"]["spec"]["containers"][0]
        env = env_of(c)
        check_secret_refs(f"Deployment {name}", env, ["OTEL_EXPORTER_OTLP_HEADERS", "STREAMING_HUB_SIGNATURE_KEYS"])
        if not c.get("envFrom"):
            problem(f"Deployment {name}: extraEnvFrom not in its envFrom")


def main():
    args = sys.argv[1:]
    production = "--production" in args
    all_on = "--all-on" in args
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1:
        print(__doc__)
        return 2
    with open(paths[0]) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]

    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    roles = {}
    for name, d in deployments.items():
        spec = d["spec"]["template"]["spec"]
        c = spec["containers"][0]
        env = env_of(c)
        role = value(env, "STREAMING_HUB_ROLE")
        where = f"Deployment {name}"
        if role not in ("ingest", "delivery"):
            problem(f"{where}: STREAMING_HUB_ROLE is {role!r}, want ingest or delivery")
            continue
        roles[role] = d
        if not name.endswith("-" + role):
            problem(f"{where}: named for another role than {role}")
        if d["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component") != role:
            problem(f"{where}: its selector does not pick the {role} pods only")
        if c.get("args", [])[:1] != ["serve"]:
            problem(f"{where}: runs {c.get('args')}, want serve")
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            got = ((c.get(probe) or {}).get("httpGet") or {}).get("path")
            if got != path:
                problem(f"{where}: {probe} path is {got!r}, want {path}")
        if not (c.get("resources") or {}).get("requests"):
            problem(f"{where}: no resource requests")
        sc = spec.get("securityContext") or {}
        if not sc.get("runAsNonRoot") or not sc.get("runAsUser"):
            problem(f"{where}: not run as a non-root numeric user")
        check_secret_refs(where, env, REQUIRED_SECRETS)
        if role == "delivery":
            for name in ("STREAMING_HUB_KAFKA_BROKERS", "STREAMING_HUB_KAFKA_INSTANCE_ID"):
                if name in env:
                    problem(f"{where}: delivery pods need no Kafka settings, got {name}")
        if role == "ingest" and not value(env, "STREAMING_HUB_KAFKA_BROKERS"):
            problem(f"{where}: STREAMING_HUB_KAFKA_BROKERS is not set")
        if role == "ingest":
            # Static group membership under the pod's name (docs/operations.md): a
            # container restarted in place takes its partitions back at once.
            ref = ((env.get("STREAMING_HUB_KAFKA_INSTANCE_ID") or {}).get("valueFrom") or {}).get("fieldRef") or {}
            if ref.get("fieldPath") != "metadata.name":
                problem(f"{where}: STREAMING_HUB_KAFKA_INSTANCE_ID is not taken from the pod name (fieldRef metadata.name)")
        if production:
            if value(env, "STREAMING_HUB_ENV") != "production":
                problem(f"{where}: STREAMING_HUB_ENV is not production")
            if not value(env, "OTEL_EXPORTER_OTLP_ENDPOINT"):
                problem(f"{where}: OTEL_EXPORTER_OTLP_ENDPOINT is not set")
            if value(env, "STREAMING_HUB_ALLOW_INSECURE_DB_TLS") != "false":
                problem(f"{where}: STREAMING_HUB_ALLOW_INSECURE_DB_TLS is not false")
            if role == "ingest":
                if value(env, "STREAMING_HUB_KAFKA_TLS_ENABLED") != "true":
                    problem(f"{where}: STREAMING_HUB_KAFKA_TLS_ENABLED is not true")
                if value(env, "STREAMING_HUB_ALLOW_INSECURE_KAFKA") != "false":
                    problem(f"{where}: STREAMING_HUB_ALLOW_INSECURE_KAFKA is not false")
                if not (value(env, "STREAMING_HUB_KAFKA_SASL_MECHANISM") or "").startswith("SCRAM-"):
                    problem(f"{where}: STREAMING_HUB_KAFKA_SASL_MECHANISM is not SCRAM-*")
                check_secret_refs(where, env, ["STREAMING_HUB_KAFKA_SASL_USERNAME",
                                               "STREAMING_HUB_KAFKA_SASL_PASSWORD",
                                               "STREAMING_HUB_KAFKA_CA_CERT"])
    for role in ("ingest", "delivery"):
        if role not in roles:
            problem(f"no Deployment with STREAMING_HUB_ROLE={role}")

    jobs = [d for d in docs if d["kind"] == "Job"]
    if len(jobs) != 1:
        problem(f"{len(jobs)} Jobs, want the migrations Job")
    for j in jobs:
        hooks = set(j["metadata"].get("annotations", {}).get("helm.sh/hook", "").split(","))
        if hooks != {"pre-install", "pre-upgrade"}:
            problem(f"Job {j['metadata']['name']}: hooks {sorted(hooks)}, want pre-install and pre-upgrade")
        c = j["spec"]["template"]["spec"]["containers"][0]
        if (c.get("args") or [])[:1] != ["migrate"]:
            problem(f"Job {j['metadata']['name']}: runs {c.get('args')}, want migrate")
        check_secret_refs(f"Job {j['metadata']['name']}", env_of(c), ["STREAMING_HUB_DATABASE_URL"])

    pdbs = {d["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component")
            for d in docs if d["kind"] == "PodDisruptionBudget"}
    for role in roles:
        if role not in pdbs:
            problem(f"no PodDisruptionBudget for the {role} pods")
    if not any(d["kind"] == "Service" for d in docs):
        problem("no Service")

    optional = {"ServiceMonitor": "monitoring.coreos.com/v1", "PrometheusRule": "monitoring.coreos.com/v1",
                "HorizontalPodAutoscaler": "autoscaling/v2", "Ingress": "networking.k8s.io/v1"}
    if all_on:
        check_all_on(docs, deployments, jobs, optional)
    else:
        for kind in optional:
            if any(d["kind"] == kind for d in docs):
                problem(f"a {kind} is rendered, but it is off by default")

    for p in problems:
        print("check-rendered:", p)
    if problems:
        return 1
    print(f"check-rendered: {paths[0]}: Deployments {sorted(deployments)} carry their role, probes and secret references"
          f" (ingest: the instance id from the pod name);"
          f" migrations Job, PodDisruptionBudgets and Service present;"
          + (f" {', '.join(sorted(optional))} rendered as asked, extra volumes, env and OTLP headers by reference"
             if all_on else " no optional template rendered"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
