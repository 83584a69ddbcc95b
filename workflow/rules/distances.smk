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
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
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
            input.documents, wildcards.block, threads, attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, threads, attempt: block_resources(
            input.documents, wildcards.block, threads, attempt
        )["runtime"],
    params:
        weighting=lambda wildcards: (
            "tfidf" if wildcards.method == "wmd-tfidf" else "bow"
        ),
        splits=lambda wildcards, input: (
            f"--splits {input.splits}" if config["wmd"]["skip_test_pairs"] else ""
        ),
    shell:
        "wmdeval wmd-block --documents {input.documents} --embeddings {input.embeddings}"
        " {params.splits} --weighting {params.weighting} --block {wildcards.block}"
        " --threads {threads} --out {output} 2> {log}"


rule wmd_gather:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
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
        # the float32 matrix twice (assembly and Parquet) plus one block in flight
        mem_mb=lambda wildcards, input, attempt: gather_mem_mb(input.documents)
        * attempt,
        runtime=30,
    params:
        name=lambda wildcards: method_by_slug(wildcards.method).name,
        splits=lambda wildcards, input: (
            f"--splits {input.splits}" if config["wmd"]["skip_test_pairs"] else ""
        ),
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
