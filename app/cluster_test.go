package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
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
	want := fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", svc.Name, ns, port)
	if !slices.Equal(cfg.Policy.Endpoints, []string{want}) {
		t.Errorf("policy.endpoints = %v, want [%s] (the headless Service)", cfg.Policy.Endpoints, want)
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
	if got, want := args[i+1:], trainerArgs(cfg, root); !slices.Equal(got, want) {
		t.Errorf("trainer Job flags:\n got %q\nwant %q (what parley derives from the trainer.* keys)", got, want)
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
