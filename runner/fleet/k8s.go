package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/qualkit/qualkit/schemas/contract"
)

// KubernetesList is what qualrun fleet k8s writes: a v1 List of Indexed Jobs, one per distinct
// Kubernetes host selector of the plan's rows.
type KubernetesList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Items      []batchv1.Job  `json:"items"`
	Metadata   map[string]any `json:"metadata"`
}

// KubernetesJobs builds the Indexed Jobs of a plan (completionMode Indexed; a pod's
// JOB_COMPLETION_INDEX picks its row from the Job's row list; backoffLimitPerIndex retries one
// row; a podFailurePolicy built from pol fails a row at once on a final exit code and counts a
// retryable one) and returns them as JSON, checked by decoding it back into the k8s.io/api types
// with unknown fields refused and comparing. The Jobs are generated and validated, not run.
func KubernetesJobs(plan *Plan, pol ExitPolicy) ([]byte, error) {
	if err := pol.validate(); err != nil {
		return nil, err
	}
	d := plan.Doc
	if d.Kubernetes == nil {
		return nil, fmt.Errorf("fleet plan %s has no kubernetes section (namespace, image, signing_secret, receipts_claim, backoff_limit_per_index): add it to generate Kubernetes Jobs", d.ID)
	}
	type group struct {
		sel  contract.KubernetesSelector
		rows []int
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range d.Rows {
		var sel contract.KubernetesSelector
		if r.Host != nil && r.Host.Kubernetes != nil {
			sel = *r.Host.Kubernetes
		}
		kb, err := json.Marshal(sel)
		if err != nil {
			return nil, err
		}
		g, ok := byKey[string(kb)]
		if !ok {
			g = &group{sel: sel}
			byKey[string(kb)] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, int(r.Index))
	}
	list := KubernetesList{APIVersion: "v1", Kind: "List", Metadata: map[string]any{}}
	for gi, g := range groups {
		job, err := indexedJob(plan, pol, gi, len(groups), g.sel, g.rows)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, job)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(list); err != nil {
		return nil, err
	}
	if err := roundTrip(buf.Bytes(), list); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// roundTrip decodes out back into the k8s.io/api types, refusing any field they do not have, and
// requires the same value: the generated document is exactly what the types describe.
func roundTrip(out []byte, want KubernetesList) error {
	var back KubernetesList
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		return fmt.Errorf("the generated Jobs do not decode into the k8s.io/api types: %w", err)
	}
	again, err := json.Marshal(back)
	if err != nil {
		return err
	}
	first, err := json.Marshal(want)
	if err != nil {
		return err
	}
	if !bytes.Equal(first, again) {
		return fmt.Errorf("the generated Jobs change when round-tripped through the k8s.io/api types")
	}
	return nil
}

const (
	keyVolume      = "qualkit-signing-key"
	receiptsVolume = "qualkit-receipts"
)

func indexedJob(plan *Plan, pol ExitPolicy, gi, ng int, sel contract.KubernetesSelector, rows []int) (batchv1.Job, error) {
	d := plan.Doc
	k := d.Kubernetes
	name := "qualkit-" + d.ID
	if ng > 1 {
		name += "-" + strconv.Itoa(gi)
	}
	name = strings.NewReplacer(".", "-", "_", "-").Replace(name)
	if len(name) > 63 {
		return batchv1.Job{}, fmt.Errorf("fleet plan id %s gives the Job name %s, longer than 63 characters: shorten the id", d.ID, name)
	}
	n := int32(len(rows))
	backoff := int32(k.BackoffLimitPerIndex)
	// backoffLimit is left unset: with backoffLimitPerIndex the API defaults it to the maximum, so
	// only each row's own limit ends its retries.
	mode := batchv1.IndexedCompletion
	var retry, final []int32
	for _, c := range pol.Retry {
		retry = append(retry, int32(c))
	}
	for _, c := range pol.Final {
		final = append(final, int32(c))
	}
	sort.Slice(retry, func(i, j int) bool { return retry[i] < retry[j] })
	sort.Slice(final, func(i, j int) bool { return final[i] < final[j] })
	container := "qualrun"

	var b strings.Builder
	b.WriteString("set -uo pipefail\n")
	b.WriteString("# The Job's completion index picks the plan row from the Job's row list.\n")
	fmt.Fprintf(&b, "JOB_ROWS=(%s)\n", codeList(rows))
	b.WriteString("ROW=${JOB_ROWS[${JOB_COMPLETION_INDEX:-x}]:-}\nHOST_NAME=${NODE_NAME:-}\n")
	taskBody(&b, plan, pol, rows) // only this Job's rows: the object stays small
	b.WriteString("# The podFailurePolicy reads this exit code: retryable codes count against backoffLimitPerIndex, the others fail the row.\nexit \"$RC\"\n")

	limits := corev1.ResourceList{}
	for _, rn := range sortedKeys(sel.Limits) {
		q, err := resource.ParseQuantity(sel.Limits[rn])
		if err != nil {
			return batchv1.Job{}, fmt.Errorf("fleet plan row limit %s: %q is not a Kubernetes quantity: %v", rn, sel.Limits[rn], err)
		}
		limits[corev1.ResourceName(rn)] = q
	}
	var res corev1.ResourceRequirements
	if len(limits) > 0 {
		res.Limits = limits
	}
	keyDir := path.Dir(d.Signing.KeyFile)
	labels := map[string]string{"app.kubernetes.io/name": "qualkit-fleet", "qualkit.dev/plan": strings.ReplaceAll(d.ID, "_", "-")}
	job := batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: k.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				"qualkit.dev/plan-digest": plan.Digest,
				"qualkit.dev/commit":      d.Commit,
				"qualkit.dev/rows":        codeList(rows),
				"qualkit.dev/generated":   "qualrun fleet k8s; generated and validated against k8s.io/api, not run by qualkit",
			},
		},
		Spec: batchv1.JobSpec{
			Completions:          &n,
			Parallelism:          &n,
			CompletionMode:       &mode,
			BackoffLimitPerIndex: &backoff,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: &container, Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: final}},
				{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: &container, Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: retry}},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  sel.NodeSelector,
					Containers: []corev1.Container{{
						Name:      container,
						Image:     k.Image,
						Command:   []string{"/bin/bash", "-c", b.String()},
						Env:       []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						Resources: res,
						VolumeMounts: []corev1.VolumeMount{
							{Name: keyVolume, MountPath: keyDir, ReadOnly: true},
							{Name: receiptsVolume, MountPath: d.Receipts.Directory},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: keyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: k.SigningSecret}}},
						{Name: receiptsVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.ReceiptsClaim}}},
					},
				},
			},
		},
	}
	return job, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
