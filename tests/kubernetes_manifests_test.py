#!/usr/bin/python3
"""deploy/kubernetes/ checked offline: no cluster, no kubectl (Debian 12 packages none).

A schema check of our own for what these manifests use (kinds and their apiVersions, names,
selectors against pod labels, named ports, probes, volumes and claims, the GPU request), the
wiring between them (every tcp:// endpoint in a container's arguments names a Service, or a
StatefulSet pod through its headless Service, and a port that Service has), and the ember
arguments themselves: each container's arguments are given to the real binary with
--print-config, which parses and range-checks every flag and exits.

Run by ctest (tests/CMakeLists.txt), which sets EMBER_ROUTER_BIN, EMBER_WORKER_BIN,
EMBER_GATEWAY_BIN.
"""

import os
import re
import subprocess
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, "..", "deploy", "kubernetes")
BINARIES = {
    "/usr/local/bin/ember-router": os.environ.get("EMBER_ROUTER_BIN", ""),
    "/usr/local/bin/ember-worker": os.environ.get("EMBER_WORKER_BIN", ""),
    "/usr/local/bin/ember-gateway": os.environ.get("EMBER_GATEWAY_BIN", ""),
}
API_VERSIONS = {
    "Namespace": "v1",
    "Service": "v1",
    "PersistentVolumeClaim": "v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
WORKLOADS = ("Deployment", "StatefulSet")


def load_manifests(directory):
    """{file name: [documents]} of every YAML file in `directory`."""
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".yaml"):
            with open(os.path.join(directory, name)) as f:
                out[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return out


def problems(manifests):
    """Every problem found, as readable strings (empty: the manifests are sound)."""
    found = []
    docs = [d for name, ds in manifests.items() if name != "kustomization.yaml" for d in ds]
    by_kind = {}
    for d in docs:
        kind = d.get("kind")
        name = (d.get("metadata") or {}).get("name", "")
        where = "%s/%s" % (kind, name)
        if kind not in API_VERSIONS:
            found.append("%s: unknown kind" % where)
            continue
        if d.get("apiVersion") != API_VERSIONS[kind]:
            found.append("%s: apiVersion %r, expected %r" % (where, d.get("apiVersion"),
                                                            API_VERSIONS[kind]))
        if not DNS_LABEL.match(name) or len(name) > 63:
            found.append("%s: name is not a DNS label" % where)
        by_kind.setdefault(kind, {})[name] = d

    kustomization = manifests.get("kustomization.yaml", [{}])[0]
    listed = set(kustomization.get("resources", []))
    files = set(manifests) - {"kustomization.yaml"}
    if listed != files:
        found.append("kustomization resources %s != files %s" % (sorted(listed), sorted(files)))

    def pods(selector):
        """Workloads whose pod labels match `selector`."""
        return [w for kind in WORKLOADS for w in by_kind.get(kind, {}).values()
                if selector and all(w["spec"]["template"]["metadata"].get("labels", {}).get(k) == v
                                    for k, v in selector.items())]

    def container_ports(workload):
        return {p.get("name"): p.get("containerPort")
                for c in workload["spec"]["template"]["spec"]["containers"]
                for p in c.get("ports", [])}

    claims = set(by_kind.get("PersistentVolumeClaim", {}))
    for kind in WORKLOADS:
        for name, w in by_kind.get(kind, {}).items():
            where = "%s/%s" % (kind, name)
            spec = w.get("spec", {})
            labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
            match = spec.get("selector", {}).get("matchLabels", {})
            if not match or any(labels.get(k) != v for k, v in match.items()):
                found.append("%s: selector %s does not match pod labels %s" % (where, match, labels))
            pod = spec.get("template", {}).get("spec", {})
            containers = pod.get("containers") or []
            if not containers:
                found.append("%s: no containers" % where)
            ports = container_ports(w)
            for c in containers:
                cw = "%s container %s" % (where, c.get("name"))
                if not c.get("image"):
                    found.append("%s: no image" % cw)
                if "memory" not in c.get("resources", {}).get("limits", {}):
                    found.append("%s: no memory limit" % cw)
                for p in c.get("ports", []):
                    if len(p.get("name", "")) > 15:
                        found.append("%s: port name %r over 15 characters" % (cw, p["name"]))
                for probe in ("readinessProbe", "livenessProbe"):
                    action = c.get(probe, {})
                    for how in ("tcpSocket", "httpGet"):
                        port = action.get(how, {}).get("port")
                        if isinstance(port, str) and port not in ports:
                            found.append("%s: %s names port %r it does not have" % (cw, probe, port))
            for v in pod.get("volumes", []):
                claim = v.get("persistentVolumeClaim", {}).get("claimName")
                if claim is not None and claim not in claims:
                    found.append("%s: volume %s claims %r, which is not defined" % (where, v["name"],
                                                                                   claim))
            mounted = {v["name"] for v in pod.get("volumes", [])}
            for c in containers:
                for m in c.get("volumeMounts", []):
                    if m.get("name") not in mounted:
                        found.append("%s: mounts undefined volume %r" % (where, m.get("name")))
            if kind == "StatefulSet":
                svc = by_kind.get("Service", {}).get(spec.get("serviceName"))
                if svc is None or svc["spec"].get("clusterIP") != "None":
                    found.append("%s: serviceName %r is not a headless Service" %
                                 (where, spec.get("serviceName")))
                elif w not in pods(svc["spec"].get("selector")):
                    found.append("%s: its headless Service does not select it" % where)

    for name, s in by_kind.get("Service", {}).items():
        where = "Service/%s" % name
        selected = pods(s.get("spec", {}).get("selector"))
        if not selected:
            found.append("%s: selects no workload" % where)
            continue
        for p in s["spec"].get("ports", []):
            target = p.get("targetPort", p.get("port"))
            for w in selected:
                ports = container_ports(w)
                if (isinstance(target, str) and target not in ports) or (
                        isinstance(target, int) and target not in ports.values()):
                    found.append("%s: port %s targets %r, which %s does not expose" %
                                 (where, p.get("name"), target, w["metadata"]["name"]))

    # Every tcp:// endpoint a container is given must lead somewhere.
    services = by_kind.get("Service", {})
    sets = by_kind.get("StatefulSet", {})
    for kind in WORKLOADS:
        for name, w in by_kind.get(kind, {}).items():
            for c in w["spec"]["template"]["spec"]["containers"]:
                for arg in c.get("args", []):
                    for host, port in re.findall(r"tcp://([A-Za-z0-9.-]+):(\d+)", str(arg)):
                        if host.startswith("0.0.0.0"):
                            continue
                        found += endpoint_problems("%s/%s" % (kind, name), host, int(port),
                                                   services, sets)
    return found


def endpoint_problems(where, host, port, services, sets):
    parts = host.split(".")
    if len(parts) == 1:  # a Service
        svc = services.get(parts[0])
        if svc is None:
            return ["%s: endpoint %s:%d names no Service" % (where, host, port)]
        service = svc
    elif len(parts) == 2:  # <statefulset>-<i>.<headless service>
        pod, svc_name = parts
        service = services.get(svc_name)
        owner = next((s for s in sets.values() if s["spec"].get("serviceName") == svc_name), None)
        m = re.match(r"^(.*)-(\d+)$", pod)
        if service is None or owner is None or m is None or m.group(1) != owner["metadata"]["name"]:
            return ["%s: endpoint %s:%d is not a StatefulSet pod behind its Service" %
                    (where, host, port)]
        if int(m.group(2)) >= owner["spec"].get("replicas", 1):
            return ["%s: endpoint %s:%d names pod %s beyond the StatefulSet's %d replicas" %
                    (where, host, port, pod, owner["spec"].get("replicas", 1))]
    else:
        return ["%s: endpoint %s:%d is neither a Service nor a StatefulSet pod" %
                (where, host, port)]
    if port not in [p.get("port") for p in service["spec"].get("ports", [])]:
        return ["%s: endpoint %s:%d: the Service has no port %d" % (where, host, port, port)]
    return []


class ManifestTest(unittest.TestCase):
    def setUp(self):
        self.manifests = load_manifests(DEPLOY)

    def test_manifests_are_sound(self):
        self.assertEqual(problems(self.manifests), [])

    def test_workers_take_one_gpu_each_and_register_with_every_router(self):
        docs = [d for ds in self.manifests.values() for d in ds]
        worker = next(d for d in docs if d.get("kind") == "Deployment" and
                      d["metadata"]["name"] == "ember-worker")
        routers = next(d for d in docs if d.get("kind") == "StatefulSet" and
                       d["metadata"]["name"] == "ember-router")
        container = worker["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(container["resources"]["limits"].get("nvidia.com/gpu"), 1)
        given = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--router=")]
        expected = ["tcp://ember-router-%d.ember-routers:5556" % i
                    for i in range(routers["spec"]["replicas"])]
        self.assertEqual(given, expected)

    def test_the_check_catches_broken_wiring(self):
        # The check itself must be able to fail: break the manifests three ways.
        broken = yaml.safe_load(yaml.safe_dump(self.manifests))
        for docs in broken.values():
            for d in docs:
                if d.get("kind") == "Service" and d["metadata"]["name"] == "ember-redis":
                    d["spec"]["selector"] = {"app.kubernetes.io/name": "nothing"}
                if d.get("kind") == "StatefulSet":
                    d["spec"]["replicas"] = 1  # workers still name ember-router-1
                if d.get("kind") == "Deployment" and d["metadata"]["name"] == "ember-gateway":
                    d["spec"]["template"]["spec"]["containers"][0]["ports"] = []
        found = "\n".join(problems(broken))
        self.assertIn("Service/ember-redis: selects no workload", found)
        self.assertIn("beyond the StatefulSet's 1 replicas", found)
        self.assertIn("targets 'http', which ember-gateway does not expose", found)

    def test_ember_arguments_parse(self):
        ran = 0
        for docs in self.manifests.values():
            for d in docs:
                if d.get("kind") not in WORKLOADS:
                    continue
                for c in d["spec"]["template"]["spec"]["containers"]:
                    command = (c.get("command") or [""])[0]
                    if command not in BINARIES:
                        continue
                    binary = BINARIES[command]
                    self.assertTrue(binary and os.path.exists(binary),
                                    "missing %s: run through ctest" % command)
                    args = [a.replace("$(POD_NAME)", "pod-0") for a in c.get("args", [])]
                    result = subprocess.run([binary] + args + ["--print-config"],
                                            capture_output=True, text=True, timeout=30)
                    self.assertEqual(result.returncode, 0, "%s %s:\n%s" % (command, args,
                                                                          result.stderr))
                    ran += 1
        self.assertEqual(ran, 3)  # router, worker, gateway


if __name__ == "__main__":
    unittest.main(verbosity=2)
