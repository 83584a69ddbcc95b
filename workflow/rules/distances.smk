# Stage 4: WMD and WMD-TF-IDF matrices by exact optimal transport, solved in stored blocks.
# WMD is solved once on the original documents; the clean variant (a subset) takes
# its rows and columns. WMD-TF-IDF depends on the variant's IDF, so it is solved per variant.
#
# A block is the stored unit of WMD work: wmd.blocks of them per matrix, balanced by
# estimated work, named "<k>-of-<wmd.blocks>". One job solves one block. How many jobs run
# at once (--cores) or go to SLURM together (groups / group-components, see
# profiles/slurm) is a scheduling choice that never renames a block, so it never reruns one.
#
# Block files are kept, not temp(): they are the expensive part (CPU-hours for the paper's
# data), and with them a lost matrix or a changed gather reruns in minutes instead of
# re-solving every block. temp() would resume an interrupted run just as well (Snakemake
# deletes temp files only once every consumer has finished) and save disk (about 16 bytes
# per pair, the order of the matrix itself), but any later gather would then solve the whole
# matrix again. To reclaim the disk after a project, delete results/*/*/wmd_blocks/.
# Code: workflow/wmdeval/distances/ (wmd/solver.py, wmd/pairs.py, wmd/blocks.py, pca.py);
# the jobs' mem_mb and runtime: workflow/wmdeval/planning/resources.py.


rule wmd_block:
    input:
        **skipped_pair_splits("results/{dataset}/{variant}/splits.parquet"),
        documents="results/{dataset}/{variant}/documents.parquet",
        embeddings=wmd_embeddings,
    output:
        "results/{dataset}/{variant}/wmd_blocks/{method}/{block}.parquet",
    log:
        logged("{dataset}/{variant}/wmd_blocks/{method}/{block}"),
    benchmark:
        benchmarked("{dataset}/{variant}/wmd_blocks/{method}/{block}")
    wildcard_constraints:
        block="[0-9]+-of-[0-9]+",
    conda:
        "../../envs/wmdeval.yaml"
    threads: config["wmd"]["threads"]
    resources:
        # from the estimated work of the block; doubled on each retry (--retries). A group
        # of blocks asks for the sum over the blocks it runs side by side (the max runtime).
        mem_mb=lambda wildcards, input, threads, attempt: block_resources(
            input, wildcards.block, threads, attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, threads, attempt: block_resources(
            input, wildcards.block, threads, attempt
        )["runtime"],
    params:
        weighting=transport_weighting,
        splits=optional_file("--splits", "splits"),
    shell:
        "wmdeval wmd-block --documents {input.documents} --embeddings {input.embeddings}"
        " {params.splits} --weighting {params.weighting} --block {wildcards.block}"
        " --threads {threads} --out {output} 2> {log}"


rule wmd_gather:
    input:
        **skipped_pair_splits("results/{dataset}/{variant}/splits.parquet"),
        documents="results/{dataset}/{variant}/documents.parquet",
        blocks=expand(
            "results/{{dataset}}/{{variant}}/wmd_blocks/{{method}}/{block}.parquet",
            block=WMD_BLOCKS,
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
        # the float64 matrix twice (assembly and Parquet) plus one block in flight
        mem_mb=gather_job_mem_mb,
        runtime=30,
    params:
        name=lambda wildcards: method_by_slug(wildcards.method).name,
        splits=optional_file("--splits", "splits"),
    shell:
        "wmdeval wmd-gather --documents {input.documents} --blocks {input.blocks}"
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
        # bag-of-words (and WRD's) weights do not depend on the other documents; TF-IDF
        # ones do
        method=VARIANT_FREE_METHODS,
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # the clean variant's sub-matrix, read a row group at a time
        mem_mb=subset_job_mem_mb,
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


# wmd.mode knn: instead of full matrices, an exact top-k search per query, pruned by lower
# bounds, for exactly the neighbours kNN and wkNN read (workflow/wmdeval/distances/wmd/
# search.py and bounds.py). Stored in query shards ("<k>-of-<wmd.search_shards>", auto
# decided in common.smk), one job each, then combined per method into a neighbour table that evaluate reads. The clean
# variant's search of WMD, WRD and PCA WMD takes the pairs the original's solved between
# two clean documents instead of solving them again, and its certificates: a clean list
# within an original list of the same query needs no search once the certificate's bound
# is beyond the k-th known distance (search_reuse; wmdeval/distances/wmd/reuse.py): the
# same top k, fewer solves.
rule wmd_search:
    input:
        unpack(search_reuse),
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
        embeddings=wmd_embeddings,
        # its mem_mb and runtime; ancient: a new forecast (timings) reruns no search
        forecast=ancient("results/{dataset}/{variant}/forecast/{method}.json"),
    output:
        pairs="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.parquet",
        certificates="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.certificates.parquet",
    log:
        logged("{dataset}/{variant}/neighbour_shards/{method}/{shard}"),
    benchmark:
        benchmarked("{dataset}/{variant}/neighbour_shards/{method}/{shard}")
    wildcard_constraints:
        # with RWMD listed, WMD's search is wmd_search_with_rwmd's
        method=(
            "wmd-tfidf|wrd|wmd-pca[0-9]+"
            if RWMD_FROM_SEARCH
            else "wmd|wmd-tfidf|wrd|wmd-pca[0-9]+"
        ),
    conda:
        "../../envs/wmdeval.yaml"
    threads: config["wmd"]["threads"]
    resources:
        # from the method's cost forecast (wmd_forecast); doubled on each retry
        mem_mb=lambda wildcards, input, threads, attempt: search_resources(
            input, wildcards.shard, threads, attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, threads, attempt: search_resources(
            input, wildcards.shard, threads, attempt
        )["runtime"],
    params:
        weighting=transport_weighting,
        settings=spec_json(config["evaluation"]),
        reuse=search_reuse_arguments,
        relaxed="",
    shell:
        "wmdeval wmd-search --documents {input.documents} --splits {input.splits}"
        " --embeddings {input.embeddings} --weighting {params.weighting}"
        " --settings {params.settings:q} --shard {wildcards.shard} --threads {threads}"
        " --out-pairs {output.pairs}"
        " --out-certificates {output.certificates} {params.reuse} {params.relaxed}"
        " 2> {log}"


# RWMD as a method in knn mode: WMD's search computes every query's RWMD to every
# document as its cheap bound, so it also writes RWMD's neighbour lists (all values
# known: the top k of each list, ties included, and the smallest other value as the
# certificate), with the dense matrix's values bit for bit (embedding.relaxed_wmd_matrix).
use rule wmd_search as wmd_search_with_rwmd with:
    output:
        pairs="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.parquet",
        certificates="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.certificates.parquet",
        relaxed_pairs="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.rwmd.parquet",
        relaxed_certificates="results/{dataset}/{variant}/neighbour_shards/{method}/{shard}.rwmd.certificates.parquet",
    wildcard_constraints:
        # no job unless RWMD is listed ("(?!)" matches nothing)
        method="wmd" if RWMD_FROM_SEARCH else "(?!)",
    params:
        weighting=transport_weighting,
        settings=spec_json(config["evaluation"]),
        reuse=search_reuse_arguments,
        relaxed=lambda wildcards, output: (
            f"--out-relaxed-pairs {output.relaxed_pairs}"
            f" --out-relaxed-certificates {output.relaxed_certificates}"
        ),


# knn mode: before any search shard runs, a timed seeded sample of the method's queries
# (wmd.forecast_queries per query role, wmd.forecast_seed), searched as the shards search,
# forecasts the whole search's solves and CPU and each shard's runtime and mem_mb, which
# the wmd_search jobs request (workflow/wmdeval/planning/forecast.py).
rule wmd_forecast:
    input:
        # the clean variant's search takes the original's pairs: so does its sample
        unpack(search_reuse),
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
        embeddings=wmd_embeddings,
    output:
        "results/{dataset}/{variant}/forecast/{method}.json",
    log:
        logged("{dataset}/{variant}/forecast/{method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/forecast/{method}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: config["wmd"]["threads"]
    resources:
        # what one search shard holds (the sample's bounds are no larger)
        mem_mb=lambda wildcards, input, threads, attempt: wmd_search_resources(
            input.documents, SEARCH_SHARD_COUNT, threads, attempt
        )["mem_mb"],
        runtime=lambda wildcards, attempt: 30 * attempt,
    params:
        weighting=transport_weighting,
        settings=spec_json(config["evaluation"]),
        shards=SEARCH_SHARD_COUNT,
        queries=config["wmd"]["forecast_queries"],
        seed=config["wmd"]["forecast_seed"],
        reuse=search_reuse_arguments,
        # WMD's search lists RWMD too (wmd_search_with_rwmd): bounds for every query
        relaxed=lambda wildcards: (
            "--relaxed true" if RWMD_FROM_SEARCH and wildcards.method == "wmd" else ""
        ),
    shell:
        "wmdeval wmd-forecast --documents {input.documents} --splits {input.splits}"
        " --embeddings {input.embeddings} --weighting {params.weighting}"
        " --settings {params.settings:q} --shards {params.shards} --threads {threads}"
        " --queries-per-role {params.queries} --seed {params.seed}"
        " --checks {params.queries} --dataset {wildcards.dataset}"
        " --variant {wildcards.variant} --method {wildcards.method} --out {output}"
        " {params.reuse} {params.relaxed} 2> {log}"


rule wmd_neighbours:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        pairs=expand(
            "results/{{dataset}}/{{variant}}/neighbour_shards/{{method}}/{shard}.parquet",
            shard=SEARCH_SHARDS,
        ),
        certificates=expand(
            "results/{{dataset}}/{{variant}}/neighbour_shards/{{method}}/{shard}.certificates.parquet",
            shard=SEARCH_SHARDS,
        ),
    output:
        pairs="results/{dataset}/{variant}/neighbours/{method}.parquet",
        certificates="results/{dataset}/{variant}/neighbours/{method}.certificates.parquet",
    log:
        logged("{dataset}/{variant}/neighbours/{method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/neighbours/{method}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "wmdeval wmd-neighbours --documents {input.documents} --pairs {input.pairs}"
        " --certificates {input.certificates} --out-pairs {output.pairs}"
        " --out-certificates {output.certificates} 2> {log}"


use rule wmd_neighbours as rwmd_neighbours with:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        pairs=expand(
            "results/{{dataset}}/{{variant}}/neighbour_shards/wmd/{shard}.rwmd.parquet",
            shard=SEARCH_SHARDS,
        ),
        certificates=expand(
            "results/{{dataset}}/{{variant}}/neighbour_shards/wmd/{shard}.rwmd.certificates.parquet",
            shard=SEARCH_SHARDS,
        ),
    output:
        pairs="results/{dataset}/{variant}/neighbours/rwmd.parquet",
        certificates="results/{dataset}/{variant}/neighbours/rwmd.certificates.parquet",
    log:
        logged("{dataset}/{variant}/neighbours/rwmd"),
    benchmark:
        benchmarked("{dataset}/{variant}/neighbours/rwmd")


# knn mode: the analyses and Figures 4-5 need full matrices; they read those of a seeded
# sample of wmd.sample_documents documents, solved exactly by the rules above, each in one
# block (a sample is small: 1,000 documents are ~0.5 M pairs, minutes). The clean
# variant's sample is the original's sample cut to the clean documents (sample_within),
# so its WMD, WRD and PCA WMD matrices are cut from the original sample's.
rule sample_variant:
    input:
        unpack(sample_within),
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
    output:
        documents="results/{dataset}/{variant}/sample/documents.parquet",
        splits="results/{dataset}/{variant}/sample/splits.parquet",
    log:
        logged("{dataset}/{variant}/sample/sample_variant"),
    benchmark:
        benchmarked("{dataset}/{variant}/sample/sample_variant")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        size=config["wmd"]["sample_documents"],
        seed=config["wmd"]["sample_seed"],
        within=sample_within_argument,
    shell:
        "wmdeval sample-variant --documents {input.documents} --splits {input.splits}"
        " --size {params.size} --seed {params.seed} {params.within}"
        " --out-documents {output.documents} --out-splits {output.splits} 2> {log}"


use rule wmd_block as wmd_sample_block with:
    input:
        **skipped_pair_splits("results/{dataset}/{variant}/sample/splits.parquet"),
        documents="results/{dataset}/{variant}/sample/documents.parquet",
        embeddings=wmd_embeddings,
    output:
        "results/{dataset}/{variant}/sample/wmd_blocks/{method}/{block}.parquet",
    log:
        logged("{dataset}/{variant}/sample/wmd_blocks/{method}/{block}"),
    benchmark:
        benchmarked("{dataset}/{variant}/sample/wmd_blocks/{method}/{block}")


use rule wmd_gather as wmd_sample_gather with:
    input:
        **skipped_pair_splits("results/{dataset}/{variant}/sample/splits.parquet"),
        documents="results/{dataset}/{variant}/sample/documents.parquet",
        blocks=expand(
            "results/{{dataset}}/{{variant}}/sample/wmd_blocks/{{method}}/{block}.parquet",
            block=["1-of-1"],
        ),
    output:
        "results/{dataset}/{variant}/sample/distances/{method}.parquet",
    log:
        logged("{dataset}/{variant}/sample/distances/{method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/sample/distances/{method}")


use rule wmd_subset as wmd_sample_subset with:
    input:
        matrix="results/{dataset}/original/sample/distances/{method}.parquet",
        documents="results/{dataset}/clean/sample/documents.parquet",
    output:
        "results/{dataset}/clean/sample/distances/{method}.parquet",
    log:
        logged("{dataset}/clean/sample/distances/{method}"),
    benchmark:
        benchmarked("{dataset}/clean/sample/distances/{method}")
    wildcard_constraints:
        method=VARIANT_FREE_METHODS,


ruleorder: wmd_sample_subset > wmd_sample_gather
