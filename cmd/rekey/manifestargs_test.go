package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKubernetesManifestArgsParse checks the container arguments of deploy/kubernetes' manifests
// against rekey's own flags (the manifests' Kubernetes fields are checked in that folder's module):
// a renamed flag cannot linger in a recipe users apply as it is.
func TestKubernetesManifestArgsParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	found := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(text))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, args := range containerArgs(doc) {
				found++
				// Kubernetes expands $(VAR) from the container's environment; the Job sets the index.
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "0")
				}
				if err := parseDocCommand(args); err != nil {
					t.Errorf("%s: rekey %s: %v", filepath.Base(f), strings.Join(args, " "), err)
				}
			}
		}
	}
	if found < 3 {
		t.Fatalf("found the arguments of %d containers: the extraction is broken", found)
	}
}

// containerArgs returns the args of every container in a workload's pod template.
func containerArgs(doc map[string]any) [][]string {
	spec, _ := doc["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	var out [][]string
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		raw, _ := cm["args"].([]any)
		var args []string
		for _, a := range raw {
			s, _ := a.(string)
			args = append(args, s)
		}
		out = append(out, args)
	}
	return out
}
