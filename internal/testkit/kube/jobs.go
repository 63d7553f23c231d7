package kube

// JobTemplateYAML is an upgrade step's Job template, as a user writes it
// for upgrade.JobOptions.Template or --upgrade-job-template: a batch/v1
// Job named kubelet-upgrade, retried twice, that runs one container.
const JobTemplateYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: kubelet-upgrade
spec:
  backoffLimit: 2
  template:
    spec:
      containers:
      - name: upgrade
        image: registry.example.com/upgrader:1.37.2
`
