# Stage 4: WMD and WMD-TF-IDF matrices by exact optimal transport, sharded across jobs.
# WMD is solved once on the original documents; the clean variant (a subset) takes
# its rows and columns. WMD-TF-IDF depends on the variant's IDF, so it is solved per variant.


rule wmd_shard:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
    output:
        "results/{dataset}/{variant}/wmd_shards/{method}/{scatteritem}.parquet",
    log:
        logged("{dataset}/{variant}/wmd_shards/{method}/{scatteritem}"),
    benchmark:
        benchmarked("{dataset}/{variant}/wmd_shards/{method}/{scatteritem}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: config["wmd"]["threads"]
    resources:
        mem_mb=2000,
        runtime=120,
    params:
        weighting=lambda wildcards: (
            "tfidf" if wildcards.method == "wmd-tfidf" else "bow"
        ),
    shell:
        "wmdeval wmd-shard --documents {input.documents} --embeddings {input.embeddings}"
        " --weighting {params.weighting} --shard {wildcards.scatteritem}"
        " --threads {threads} --out {output} 2> {log}"


rule wmd_gather:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        shards=gather.wmd_shards(
            "results/{{dataset}}/{{variant}}/wmd_shards/{{method}}/{scatteritem}.parquet"
        ),
    output:
        "results/{dataset}/{variant}/distances/{method}.parquet",
    log:
        logged("{dataset}/{variant}/distances/{method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/distances/{method}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        name=lambda wildcards: (
            WMD.name if wildcards.method == WMD.slug else WMD_TFIDF.name
        ),
    shell:
        "wmdeval wmd-gather --documents {input.documents} --shards {input.shards}"
        " --method {params.name:q} --out {output} 2> {log}"


rule wmd_subset:
    input:
        matrix="results/{dataset}/original/distances/wmd.parquet",
        documents="results/{dataset}/clean/documents.parquet",
    output:
        "results/{dataset}/clean/distances/wmd.parquet",
    log:
        logged("{dataset}/clean/distances/wmd"),
    benchmark:
        benchmarked("{dataset}/clean/distances/wmd")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "wmdeval wmd-subset --matrix {input.matrix} --documents {input.documents}"
        " --out {output} 2> {log}"


ruleorder: wmd_subset > wmd_gather
