// Package kubernetes holds rekey's Kubernetes manifests; its tests decode them strictly into the
// official API types (a misspelt field fails here, not at kubectl apply) and check that they say
// what rekey needs: indexed shards that resume, a finishing step that reads every shard, and
// replicate members that stop cleanly and report health; and that deploy/image.sh checks for its
// image builder before it compiles. It is a module of its own so that the
// Kubernetes API types stay out of rekey's go.mod.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// objects are the decoded documents of every manifest, by file name.
type objects struct {
	jobs         map[string]*batchv1.Job
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	claims       map[string]*corev1.PersistentVolumeClaim
}

// workload is a Deployment's or a StatefulSet's pod template, and which it is.
func (o objects) workload(name string) (kind string, tmpl *corev1.PodTemplateSpec) {
	if d := o.deployments[name]; d != nil {
		return "Deployment", &d.Spec.Template
	}
	if s := o.statefulSets[name]; s != nil {
		return "StatefulSet", &s.Spec.Template
	}
	return "", nil
}

// decodeStrict decodes one YAML document into the API type its kind names, refusing unknown and
// duplicate fields.
func decodeStrict(doc []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return nil, fmt.Errorf("kind %q of %q: not one the tests know; add it to decodeStrict", meta.Kind, meta.APIVersion)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func splitDocuments(text []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(text), -1) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func loadManifests(t *testing.T) objects {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests here: %v", err)
	}
	o := objects{map[string]*batchv1.Job{}, map[string]*appsv1.Deployment{}, map[string]*appsv1.StatefulSet{}, map[string]*corev1.PersistentVolumeClaim{}}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(text) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			switch obj := obj.(type) {
			case *batchv1.Job:
				o.jobs[obj.Name] = obj
			case *appsv1.Deployment:
				o.deployments[obj.Name] = obj
			case *appsv1.StatefulSet:
				o.statefulSets[obj.Name] = obj
			case *corev1.PersistentVolumeClaim:
				o.claims[obj.Name] = obj
			}
		}
	}
	return o
}

// The decoder refuses what kubectl would: a misspelt field, a field at the wrong level.
func TestDecodeRefusesUnknownFields(t *testing.T) {
	text, err := os.ReadFile("migrate-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range [][2]string{
		{"backoffLimitPerIndex:", "backoffLimitPerIdx:"},
		{"completionMode: Indexed", "completionMode: Indexed\n  restartPolicy: Never"},
		{"secretKeyRef:", "secretRef:"},
	} {
		bad := bytes.Replace(text, []byte(typo[0]), []byte(typo[1]), 1)
		if bytes.Equal(bad, text) {
			t.Fatalf("%q is not in migrate-job.yaml any more: update the test", typo[0])
		}
		if _, err := decodeStrict(bad); err == nil {
			t.Errorf("%q -> %q decoded without an error", typo[0], typo[1])
		}
	}
}

func container(t *testing.T, what string, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "rekey" {
		t.Fatalf("%s: want one container named rekey (podFailurePolicy names it)", what)
	}
	return spec.Containers[0]
}

// flag returns the value of --name=value in args, "" when absent.
func flag(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func TestMigrateJobRunsResumableShards(t *testing.T) {
	o := loadManifests(t)
	job := o.jobs["rekey-orders"]
	if job == nil {
		t.Fatal("migrate-job.yaml: no Job rekey-orders")
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("the shards must be an Indexed Job: JOB_COMPLETION_INDEX picks the shard")
	}
	if s.Completions == nil || s.Parallelism == nil {
		t.Fatal("completions and parallelism must be set")
	}
	if *s.Completions < 2**s.Parallelism {
		t.Errorf("completions (%d) should be several times parallelism (%d): shards are small and resumable, a retry redoes little", *s.Completions, *s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 {
		t.Error("backoffLimitPerIndex: a shard killed with its node must be retried on its own")
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("restartPolicy must be Never with backoffLimitPerIndex")
	}
	// Exit codes that a retry cannot change fail the index; a failed run (3) and a kill retry.
	failIndex := map[int32]bool{}
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailIndex && r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
				for _, c := range r.OnExitCodes.Values {
					failIndex[c] = true
				}
			}
		}
	}
	for code, want := range map[int32]bool{1: true, 2: true, 3: false, 130: false, 137: false} {
		if failIndex[code] != want {
			t.Errorf("podFailurePolicy: exit code %d fails the index at once = %v, want %v", code, failIndex[code], want)
		}
	}
	// A pod stopped by the cluster (a node drained for an upgrade, preemption, an eviction API
	// call: the pod's DisruptionTarget condition) is no failure of its shard: it resumes without
	// spending one of backoffLimitPerIndex's retries, or a long migration through a rolling node
	// upgrade loses its index after three drains. Before, every such stop counted.
	ignored := false
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			for _, c := range r.OnPodConditions {
				ignored = ignored || r.Action == batchv1.PodFailurePolicyActionIgnore && c.Type == corev1.DisruptionTarget
			}
		}
	}
	if !ignored {
		t.Error("podFailurePolicy: a pod with the DisruptionTarget condition (drained, preempted, evicted) must be ignored (Ignore), not counted against backoffLimitPerIndex")
	}

	c := container(t, "migrate", s.Template.Spec)
	if c.Args[0] != "migrate" {
		t.Fatalf("args start with %q", c.Args[0])
	}
	wantShard := "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(int(*s.Completions))
	if got := flag(c.Args, "shard"); got != wantShard {
		t.Errorf("--shard=%q, want %q: one shard per index, N = completions", got, wantShard)
	}
	if !slices.Contains(c.Args, "--resume") {
		t.Error("--resume is missing: a retried index would refuse its own output")
	}
	if strings.Contains(flag(c.Args, "out"), "$(JOB_COMPLETION_INDEX)") || !slices.Contains(c.Args, "--shared-out") {
		t.Error("every index writes one --out together (--shared-out): the finishing step then copies no data")
	}
	if flag(c.Args, "regions") == "" {
		t.Error("--regions: shards must share one region plan (a size estimate differs by shard)")
	}
	checkPod(t, "migrate", s.Template.Spec)
}

// The finishing step finishes the output the Job's indexes write together, and only that.
func TestMergeJobFinishesTheSharedOutput(t *testing.T) {
	o := loadManifests(t)
	job, merge := o.jobs["rekey-orders"], o.jobs["rekey-orders-merge"]
	if job == nil || merge == nil {
		t.Fatal("want the Jobs rekey-orders and rekey-orders-merge")
	}
	out := flag(container(t, "migrate", job.Spec.Template.Spec).Args, "out")
	args := container(t, "merge", merge.Spec.Template.Spec).Args
	var inputs []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			inputs = append(inputs, a)
		}
	}
	if args[0] != "merge" || len(inputs) > 0 || slices.Contains(args, "--files") {
		t.Errorf("merge %q: want no inputs and no --files (it finishes the shards where they wrote)", args[1:])
	}
	if dest := flag(args, "out"); dest != out {
		t.Errorf("merge --out %q: want the Job's --out %q", dest, out)
	}
	checkPod(t, "merge", merge.Spec.Template.Spec)
}

func TestReplicateMembersStopCleanlyAndReportHealth(t *testing.T) {
	o := loadManifests(t)
	_, tmpl := o.workload("rekey-orders-replicate")
	if tmpl == nil {
		t.Fatal("no Deployment or StatefulSet rekey-orders-replicate")
	}
	spec := tmpl.Spec
	c := container(t, "replicate", spec)
	if c.Args[0] != "replicate" {
		t.Fatalf("args start with %q", c.Args[0])
	}
	if !strings.Contains(flag(c.Args, "source"), "group=") {
		t.Error("--source names no consumer group: the replicas would not share the partitions")
	}
	addr := flag(c.Args, "metrics-addr")
	_, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("--metrics-addr=%q: the probes need /healthz", addr)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
			t.Errorf("%sProbe: want an httpGet of /healthz", name)
			continue
		}
		if got := probePort(c, p.HTTPGet.Port.String()); got != port {
			t.Errorf("%sProbe port %s, --metrics-addr serves %s", name, p.HTTPGet.Port.String(), port)
		}
	}
	// A clean stop commits what was read, then the group rebalances within --rebalance-timeout.
	rebalance := time.Minute
	if v := flag(c.Args, "rebalance-timeout"); v != "" {
		var err error
		if rebalance, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= rebalance {
		t.Errorf("terminationGracePeriodSeconds %v: want more than the rebalance timeout %v, or SIGKILL cuts a clean stop short", g, rebalance)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == flag(c.Args, "state") && m.SubPathExpr == "" {
			t.Error("--state: each replica needs a folder of its own (subPathExpr)")
		}
	}
	checkPod(t, "replicate", spec)
}

// A member keeps its --state folder across restarts (docs/replicate.md): offsets.json there is
// where it continues a partition once Kafka has forgotten the group's offsets (no member for
// offsets.retention.minutes), and a member without it starts at the first retained message and
// silently misses what retention deleted since. The folder is the pod's name on a shared volume:
// a StatefulSet's member keeps its name (rekey-orders-replicate-1) when replaced; a Deployment's
// replacement pod has a new one, so a folder of its own starts empty every time. Before, the
// members were a Deployment.
func TestReplicateMembersKeepTheirStateAcrossRestarts(t *testing.T) {
	o := loadManifests(t)
	kind, tmpl := o.workload("rekey-orders-replicate")
	if tmpl == nil {
		t.Fatal("no Deployment or StatefulSet rekey-orders-replicate")
	}
	c := container(t, "replicate", tmpl.Spec)
	state := flag(c.Args, "state")
	if state == "" {
		t.Fatal("replicate has no --state: its default is a folder of the container's own file system, gone with the pod")
	}
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == state {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("--state=%s is on no volume: it goes with the pod", state)
	}
	for _, v := range tmpl.Spec.Volumes {
		if v.Name == mount.Name && v.PersistentVolumeClaim == nil {
			t.Errorf("--state=%s is on volume %s, which is not a PersistentVolumeClaim: it goes with the pod", state, v.Name)
		}
	}
	if strings.Contains(mount.SubPathExpr, "$(POD_NAME)") && kind != "StatefulSet" {
		t.Errorf("--state=%s is the folder $(POD_NAME) of its volume in a %s: a replaced pod gets a new name and an empty folder (offsets.json and its rejects left behind); a StatefulSet's member keeps its name", state, kind)
	}
}

func probePort(c corev1.Container, port string) string {
	for _, p := range c.Ports {
		if p.Name == port {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	return port
}

// checkPod: non-root as the image is, secrets only from Secrets, the image's /tmp writable.
func checkPod(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	user := imageUser(t)
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || strconv.Itoa(int(*sc.RunAsUser)) != user {
		t.Errorf("%s: want runAsNonRoot with runAsUser %s, the image's USER", what, user)
	}
	// A persistent volume's root is root's on most provisioners (a new file system, a NAS export):
	// the non-root user writes there only as its group, which fsGroup gives the volume. Before,
	// replicate's state volume had none, so its --state folder could not be written.
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && (sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup) {
			t.Errorf("%s: volume %s is a PersistentVolumeClaim: want fsGroup = runAsGroup, or user %s cannot write there", what, v.Name, user)
		}
	}
	c := spec.Containers[0]
	if c.Image != "registry.example.com/rekey:1.0.0" {
		t.Errorf("%s: image %q; every manifest names the same image", what, c.Image)
	}
	secretish := regexp.MustCompile(`PASSWORD|SECRET|ACCESS_KEY|TOKEN`)
	for _, e := range c.Env {
		if secretish.MatchString(e.Name) && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s: %s must come from a Secret (secretKeyRef)", what, e.Name)
		}
	}
	for _, a := range c.Args {
		if strings.Contains(strings.ToLower(a), "password=") {
			t.Errorf("%s: a password in the arguments: %q", what, a)
		}
	}
	if c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem {
		tmp := false
		for _, m := range c.VolumeMounts {
			tmp = tmp || m.MountPath == "/tmp"
		}
		if !tmp {
			t.Errorf("%s: a read-only root file system needs a volume at /tmp (spools)", what)
		}
	}
}

// imageUser is the numeric user of deploy/Containerfile.
func imageUser(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile("../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindSubmatch(text)
	if m == nil {
		t.Fatal("deploy/Containerfile has no numeric USER")
	}
	return string(m[1])
}
