# Stage 4: WMD and WMD-TF-IDF matrices by exact optimal transport, sharded across jobs.
# WMD is solved once on the original documents; the clean variant (a subset) takes
# its rows and columns. WMD-TF-IDF depends on the variant's IDF, so it is solved per variant.


rule wmd_shard:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
        embeddings=wmd_embeddings,
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
        # from the estimated work of the shard; doubled on each retry (--retries)
        mem_mb=lambda wildcards, input, threads, attempt: shard_resources(
            input.documents, wildcards.scatteritem, threads, attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, threads, attempt: shard_resources(
            input.documents, wildcards.scatteritem, threads, attempt
        )["runtime"],
    params:
        weighting=lambda wildcards: (
            "tfidf" if wildcards.method == "wmd-tfidf" else "bow"
        ),
        splits=lambda wildcards, input: (
            f"--splits {input.splits}" if config["wmd"]["skip_test_pairs"] else ""
        ),
    shell:
        "wmdeval wmd-shard --documents {input.documents} --embeddings {input.embeddings}"
        " {params.splits} --weighting {params.weighting} --shard {wildcards.scatteritem}"
        " --threads {threads} --out {output} 2> {log}"


rule wmd_gather:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
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
        # the float32 matrix twice (assembly and Parquet) plus one shard in flight
        mem_mb=lambda wildcards, input, attempt: gather_mem_mb(input.documents)
        * attempt,
        runtime=30,
    params:
        name=lambda wildcards: method_by_slug(wildcards.method).name,
        splits=lambda wildcards, input: (
            f"--splits {input.splits}" if config["wmd"]["skip_test_pairs"] else ""
        ),
    shell:
        "wmdeval wmd-gather --documents {input.documents} --shards {input.shards}"
        " {params.splits} --method {params.name:q} --out {output} 2> {log}"


rule wmd_subset:
    input:
        matrix="results/{dataset}/original/distances/{method}.parquet",
        documents="results/{dataset}/clean/documents.parquet",
    output:
        "results/{dataset}/clean/distances/{method}.parquet",
    log:
        logged("{dataset}/clean/distances/{method}"),
    benchmark:
        benchmarked("{dataset}/clean/distances/{method}")
    wildcard_constraints:
        # bag-of-words weights do not depend on the other documents; TF-IDF ones do
        method="wmd|wmd-pca[0-9]+",
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input, attempt: gather_mem_mb(input.documents)
        * attempt,
        runtime=30,
    shell:
        "wmdeval wmd-subset --matrix {input.matrix} --documents {input.documents}"
        " --out {output} 2> {log}"


rule project_pca:
    input:
        embeddings="results/{dataset}/vectors/embeddings.parquet",
        documents="results/{dataset}/oov/documents.parquet",
    output:
        "results/{dataset}/vectors/pca{dim}.parquet",
    log:
        logged("{dataset}/project_pca{dim}"),
    benchmark:
        benchmarked("{dataset}/project_pca{dim}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "wmdeval project-pca --embeddings {input.embeddings} --documents {input.documents}"
        " --dim {wildcards.dim} --out {output} 2> {log}"


ruleorder: wmd_subset > wmd_gather
