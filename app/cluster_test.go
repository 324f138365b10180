package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/parleyhq/parley/config"
)

// k8sObject is one decoded manifest: its file, kind, name and the typed
// object.
type k8sObject struct {
	file, kind, name, namespace string
	obj                         any
}

// decodeManifests decodes every YAML document of the files in dir into
// its k8s.io/api type, strictly: a field the type lacks (a typo, a wrong
// level) is an error naming the file and the document, as a schema
// validator (kubeconform) would report it; so is a kind the launch files
// do not use.
func decodeManifests(t *testing.T, dir string) []k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	var out []k8sObject
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for doc := 1; ; doc++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: document %d: %v", file, doc, err)
			}
			o, err := decodeObject(m)
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, doc, err)
			}
			o.file = filepath.Base(file)
			out = append(out, o)
		}
	}
	return out
}

func decodeObject(m map[string]any) (k8sObject, error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	var obj any
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	default:
		return k8sObject{}, fmt.Errorf("apiVersion %q kind %q: not a kind the launch files use", apiVersion, kind)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return k8sObject{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return k8sObject{}, fmt.Errorf("%s: %w", kind, err)
	}
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" {
		return k8sObject{}, fmt.Errorf("%s without metadata.name", kind)
	}
	return k8sObject{kind: kind, name: name, namespace: ns, obj: obj}, nil
}

func find[T any](t *testing.T, objs []k8sObject, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			return o.obj.(T)
		}
	}
	t.Fatalf("no %s %q in deploy/kubernetes", kind, name)
	var zero T
	return zero
}

// podSpecs are the pod templates of the workloads, by workload name.
func podSpecs(objs []k8sObject) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for _, o := range objs {
		switch w := o.obj.(type) {
		case *appsv1.StatefulSet:
			out[o.name] = w.Spec.Template
		case *batchv1.Job:
			out[o.name] = w.Spec.Template
		}
	}
	return out
}

// TestKubernetesManifests: deploy/kubernetes decodes strictly as
// Kubernetes objects, and they fit together: one namespace, a headless
// Service over the vLLM replicas that parley's config names, claims that
// exist, keys only from the Secret, and a trainer Job that runs the
// trainer parley would ask for with its config.
func TestKubernetesManifests(t *testing.T) {
	objs := decodeManifests(t, filepath.Join("..", "deploy", "kubernetes"))
	const ns = "parley"
	claims := map[string]bool{}
	for _, o := range objs {
		if o.kind != "Namespace" && o.namespace != ns {
			t.Errorf("%s: %s %s is in namespace %q, want %q", o.file, o.kind, o.name, o.namespace, ns)
		}
		if o.kind == "PersistentVolumeClaim" {
			claims[o.name] = true
		}
	}
	for name, tpl := range podSpecs(objs) {
		for _, v := range tpl.Spec.Volumes {
			if pvc := v.PersistentVolumeClaim; pvc != nil && !claims[pvc.ClaimName] {
				t.Errorf("%s: volume %s claims %q, which no manifest defines", name, v.Name, pvc.ClaimName)
			}
		}
		for _, c := range tpl.Spec.Containers {
			for _, e := range c.Env {
				if e.Value != "" && secretLike(e.Name) {
					t.Errorf("%s: env %s has a literal value: keys come from the Secret (valueFrom.secretKeyRef)", name, e.Name)
				}
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "parley-keys" {
					t.Errorf("%s: env %s from Secret %q, want parley-keys (the README's)", name, e.Name, ref.SecretKeyRef.Name)
				}
			}
		}
	}

	svc := find[*corev1.Service](t, objs, "Service", "vllm")
	sts := find[*appsv1.StatefulSet](t, objs, "StatefulSet", "vllm")
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || sts.Spec.ServiceName != svc.Name {
		t.Errorf("vllm: Service clusterIP %q, StatefulSet serviceName %q: want a headless Service the StatefulSet names", svc.Spec.ClusterIP, sts.Spec.ServiceName)
	}
	for k, v := range svc.Spec.Selector {
		if sts.Spec.Template.Labels[k] != v || sts.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("vllm: the Service selects %s=%s, the replicas are not labelled so", k, v)
		}
	}

	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", "parley-config")
	cfg, err := config.Parse([]byte(cm.Data["parley.yaml"]))
	if err != nil {
		t.Fatalf("parley.yaml (ConfigMap parley-config): %v", err)
	}
	port := svc.Spec.Ports[0].Port
	want := fmt.Sprintf("dns+http://%s.%s.svc.cluster.local:%d", svc.Name, ns, port)
	if !slices.Equal(cfg.Policy.Endpoints, []string{want}) {
		t.Errorf("policy.endpoints = %v, want [%s] (the headless Service, discovered)", cfg.Policy.Endpoints, want)
	}
	for _, ep := range cfg.Policy.Endpoints {
		if _, err := url.Parse(ep); err != nil {
			t.Error(err)
		}
	}
	vllm := sts.Spec.Template.Spec.Containers[0]
	if !slices.Contains(vllm.Args, "--served-model-name="+cfg.Policy.Model) || !slices.Contains(vllm.Args, fmt.Sprintf("--port=%d", port)) {
		t.Errorf("vllm args %v: want --served-model-name=%s (policy.model) and --port=%d", vllm.Args, cfg.Policy.Model, port)
	}

	// parley's container has every key its config names, from the Secret
	pj := find[*batchv1.Job](t, objs, "Job", "parley")
	parley := pj.Spec.Template.Spec.Containers[0]
	for _, key := range []string{cfg.Policy.APIKeyEnv, cfg.Judge.APIKeyEnv} {
		if !slices.ContainsFunc(parley.Env, func(e corev1.EnvVar) bool {
			return e.Name == key && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}) {
			t.Errorf("parley Job: no env %s from the Secret (the config's api_key_env)", key)
		}
	}
	root := cfg.RunDir()
	if !strings.Contains(strings.Join(parley.Args, " "), filepath.Join(root, "config.yaml")) {
		t.Errorf("parley Job args %q: want the --resume test on %s/config.yaml", parley.Args, root)
	}
	if len(cfg.Train.TrainerCommand) > 0 {
		t.Errorf("train.trainer_command is set: the trainer is its own Job")
	}

	// the trainer Job runs the trainer parley would tell one to start
	tj := find[*batchv1.Job](t, objs, "Job", "trainer")
	args := tj.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "parley_trainer")
	if i < 1 || args[i-1] != "-m" {
		t.Fatalf("trainer Job args %v: want torchrun ... -m parley_trainer <flags>", args)
	}
	if got, want := args[i+1:], cfg.TrainerArgs(root); !slices.Equal(got, want) {
		t.Errorf("trainer Job flags:\n got %q\nwant %q (what parley derives from the trainer.* keys)", got, want)
	}
	for _, a := range cfg.Trainer.ExtraArgs {
		if f, ok := config.LookupTrainerFlag(a); strings.HasPrefix(a, "--") && (!ok || f.Passed()) {
			t.Errorf("trainer.extra_args has %s: want a flag of the trainer's own (config's trainerFlags, no key)", a)
		}
	}
	nodes := *tj.Spec.Completions
	if !slices.Contains(args, fmt.Sprintf("--nnodes=%d", nodes)) || tj.Spec.CompletionMode == nil || *tj.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("trainer Job: want an Indexed Job and --nnodes=%d (its completions): %v", nodes, args)
	}
	ts := find[*corev1.Service](t, objs, "Service", "trainer")
	if ts.Spec.ClusterIP != corev1.ClusterIPNone || tj.Spec.Template.Spec.Subdomain != ts.Name ||
		!slices.Contains(args, fmt.Sprintf("--rdzv-endpoint=%s-0.%s.%s.svc.cluster.local:%d", tj.Name, ts.Name, ns, ts.Spec.Ports[0].Port)) {
		t.Errorf("trainer: want the rendezvous on pod 0 under the headless Service %s: %v", ts.Name, args)
	}
	// every pod that reads or writes the run directory mounts it at the
	// same place (vLLM loads adapters by the path the trainer writes)
	for name, tpl := range podSpecs(objs) {
		mounted := false
		for _, c := range tpl.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if m.MountPath == cfg.Run.Dir {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("%s: does not mount the run directory at %s (run.dir)", name, cfg.Run.Dir)
		}
	}
}

// secretLike reports whether an environment variable's name looks like a
// key (what train.childEnv keeps from the processes it starts).
func secretLike(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// slurmStubs writes stand-ins for the commands deploy/slurm/parley.sbatch
// runs (srun, scontrol, hostname, curl, parley) into a folder: each logs
// its name and arguments, tab-separated, one call a line, to calls; srun
// then runs on as a server does, curl answers once the replica's srun has
// run, and parley also logs the PARLEY_* variables the script sets.
func slurmStubs(t *testing.T, calls string) string {
	t.Helper()
	dir := t.TempDir()
	// one write a call: the vLLM steps run at once, in the background
	log := `line=$(basename "$0"); for a in "$@"; do line=$(printf '%s\t%s' "$line" "$a"); done; printf '%s\n' "$line" >>` + calls + "\n"
	stubs := map[string]string{
		// a vLLM step runs until the script ends it
		"srun": log + "exec sleep 60\n",
		// a replica is healthy once its step has started (within 5 s)
		"curl": log + `for url; do :; done; node=${url#http://}; node=${node%%:*}
for i in $(seq 100); do grep -q "nodelist=$node" ` + calls + ` && exit 0; sleep 0.05; done; exit 7` + "\n",
		"hostname": "echo node1\n",
		"scontrol": log + `[ "$1 $2" = "show hostnames" ] && printf 'node%s\n' 1 2 3 4` + "\n",
		"parley": log + `for v in PARLEY_POLICY_ENDPOINTS PARLEY_TRAIN_TRAINER_COMMAND PARLEY_RUN_DIR PARLEY_RUN_NAME; do
printf 'env\t%s\t%s\n' "$v" "$(printenv "$v")" >>` + calls + "\ndone\n",
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSlurmDryRun runs deploy/slurm/parley.sbatch with stand-ins for
// Slurm's commands on a 4-node allocation and checks what it would run: a
// vLLM replica on each of the first two nodes, parley on the head node with
// all their endpoints and the trainer command (torchrun across the other
// two nodes through srun, the c10d rendezvous on the first of them), which
// parley's config loading reads back as train.trainer_command; run again
// once the run exists, it resumes. One node is refused.
func TestSlurmDryRun(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "deploy", "slurm", "parley.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", script, err, out)
	}
	runDir := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	stubs := slurmStubs(t, calls)
	env := []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + t.TempDir(),
		"SLURM_JOB_NODELIST=node[1-4]", "SLURM_JOB_ID=42", "SLURM_JOB_NAME=parley", "SLURM_GPUS_ON_NODE=8",
		"PARLEY_CONFIG=/cfg/paper.yaml", "PARLEY_MODEL=/models/Qwen3-14B", "PARLEY_SERVED_MODEL=Qwen/Qwen3-14B",
		"PARLEY_BIN=" + filepath.Join(stubs, "parley"), "PARLEY_PYTHON=/venv/bin/python", "PARLEY_RUN_DIR=" + runDir, "PARLEY_VLLM_START_TIMEOUT=30"}
	run := func(extra ...string) (string, [][]string) {
		t.Helper()
		_ = os.Remove(calls)
		cmd := exec.Command("bash", script)
		cmd.Env = append(slices.Clone(env), extra...)
		out, err := cmd.CombinedOutput()
		b, _ := os.ReadFile(calls)
		var got [][]string
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if line != "" {
				got = append(got, strings.Split(line, "\t"))
			}
		}
		if err != nil {
			return string(out), got
		}
		return "", got
	}
	failed, got := run()
	if failed != "" {
		t.Fatalf("the script failed:\n%s", failed)
	}
	byName := func(name string) [][]string {
		var out [][]string
		for _, c := range got {
			if c[0] == name {
				out = append(out, c[1:])
			}
		}
		return out
	}
	sruns := byName("srun")
	slices.SortFunc(sruns, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
	if len(sruns) != 2 {
		t.Fatalf("srun calls %q: want one vLLM step on each of node1 and node2", sruns)
	}
	for i, s := range sruns {
		node := fmt.Sprintf("node%d", i+1)
		want := []string{"--nodes=1", "--ntasks=1", "--nodelist=" + node, "--kill-on-bad-exit=1", "/venv/bin/python", "-m", "parley_trainer.serve_vllm",
			"--model", "/models/Qwen3-14B", "--served-model-name", "Qwen/Qwen3-14B", "--host", "0.0.0.0", "--port", "8000",
			"--max-lora-rank", "64", "--dtype", "bfloat16", "--", "--tensor-parallel-size", "8"}
		if !slices.Equal(s, want) {
			t.Errorf("vLLM step %d:\n got %q\nwant %q", i, s, want)
		}
	}
	if c := byName("curl"); len(c) != 2 || c[0][len(c[0])-1] != "http://node1:8000/health" || c[1][len(c[1])-1] != "http://node2:8000/health" {
		t.Errorf("health checks %q: want each replica's /health", c)
	}
	if p := byName("parley"); len(p) != 1 || !slices.Equal(p[0], []string{"train", "--config", "/cfg/paper.yaml"}) {
		t.Errorf("parley calls %q: want one `train --config /cfg/paper.yaml`", p)
	}
	vars := map[string]string{}
	for _, e := range byName("env") {
		vars[e[0]] = e[1]
	}
	nodefile := filepath.Join(runDir, ".trainer-nodes-42")
	wantTrainer := []string{"srun", "--nodes=2", "--ntasks-per-node=1", "--nodelist=" + nodefile, "--kill-on-bad-exit=1",
		"/venv/bin/python", "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=8",
		"--rdzv-backend=c10d", "--rdzv-endpoint=node3:29400", "--rdzv-id=42", "-m", "parley_trainer"}
	if b, _ := os.ReadFile(nodefile); string(b) != "node3\nnode4\n" {
		t.Errorf("trainer node file %s holds %q, want node3 and node4", nodefile, b)
	}
	// parley reads the variables as its config keys
	for k, v := range vars {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(filepath.Join("..", "configs", "paper-qwen3-14b.yaml"), nil)
	if err != nil {
		t.Fatalf("the script's PARLEY_* variables over the paper config: %v", err)
	}
	if !slices.Equal(cfg.Train.TrainerCommand, wantTrainer) {
		t.Errorf("train.trainer_command:\n got %q\nwant %q", cfg.Train.TrainerCommand, wantTrainer)
	}
	if want := []string{"http://node1:8000", "http://node2:8000"}; !slices.Equal(cfg.Policy.Endpoints, want) {
		t.Errorf("policy.endpoints = %q, want %q", cfg.Policy.Endpoints, want)
	}
	if cfg.RunDir() != filepath.Join(runDir, "parley") {
		t.Errorf("run directory %s, want %s/parley (PARLEY_RUN_DIR, the job's name)", cfg.RunDir(), runDir)
	}

	// the run exists: the next job resumes it
	if err := os.MkdirAll(filepath.Join(runDir, "parley"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "parley", "config.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if failed, got = run(); failed != "" {
		t.Fatalf("the script failed:\n%s", failed)
	}
	if p := byName("parley"); len(p) != 1 || !slices.Contains(p[0], "--resume") {
		t.Errorf("parley calls %q once the run exists: want --resume", p)
	}

	failed, _ = run("PARLEY_VLLM_NODES=4")
	if !strings.Contains(failed, "want at least one vLLM node and one trainer node") {
		t.Errorf("4 vLLM nodes of 4: %q, want the refusal", failed)
	}
}
