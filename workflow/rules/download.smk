# Stage 0: remote files (`url:` in the config) into resources/, checksummed.
# Download jobs run on the submitting host (cluster nodes often have no internet).
# Code: workflow/wmdeval/ingest/download.py.


localrules:
    download,
    extract,


rule download:
    output:
        "resources/downloads/{download}",
    log:
        logged("downloads/{download}"),
    benchmark:
        benchmarked("downloads/{download}")
    retries: 2
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=240,
    params:
        url=lambda wildcards: DOWNLOADS[wildcards.download]["url"],
        sha256=lambda wildcards: DOWNLOADS[wildcards.download]["sha256"] or "null",
    shell:
        "wmdeval download --url {params.url:q} --sha256 {params.sha256}"
        " --lock-file resources/checksums.lock --out {output} 2> {log}"


rule extract:
    input:
        "resources/downloads/{download}",
    output:
        "resources/data/{download}/{member}",
    log:
        logged("downloads/{download}/{member}"),
    benchmark:
        benchmarked("downloads/{download}/{member}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=60,
    shell:
        "wmdeval extract --archive {input} --member {wildcards.member:q} --out {output}"
        " 2> {log}"
