# Beyond the paper: how different are the document distances really?


rule wmd_vs_bow:
    input:
        unpack(analysis_inputs),
    output:
        "results/{dataset}/{variant}/analysis/wmd_vs_bow.parquet",
    log:
        logged("{dataset}/{variant}/analysis/wmd_vs_bow"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/wmd_vs_bow")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=60,
    params:
        wmd=wmd_argument,
        seed=config["report"]["seed"],
    shell:
        "wmdeval wmd-vs-bow --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --seed {params.seed} --out {output} 2> {log}"


rule wmd_vs_bow_table:
    input:
        per_variant("results/{dataset}/{variant}/analysis/wmd_vs_bow.parquet"),
    output:
        csv=report(
            "results/tables/wmd_vs_bow.csv",
            caption="../report/wmd_vs_bow.rst",
            category="Analyses",
        ),
        md="results/tables/wmd_vs_bow.md",
    log:
        logged("tables/wmd_vs_bow"),
    benchmark:
        benchmarked("tables/wmd_vs_bow")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "wmdeval wmd-vs-bow-table --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


rule n2o:
    input:
        unpack(analysis_inputs),
    output:
        "results/{dataset}/{variant}/analysis/n2o.parquet",
    log:
        logged("{dataset}/{variant}/analysis/n2o"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/n2o")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=60,
    params:
        wmd=wmd_argument,
        ks=" ".join(map(str, ANALYSES["n2o"]["ks"])),
        queries=json.dumps(ANALYSES["n2o"]["queries"]),
        seed=config["report"]["seed"],
    shell:
        "wmdeval n2o --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --ks {params.ks} --queries {params.queries} --seed {params.seed} --out {output}"
        " 2> {log}"


rule n2o_report:
    input:
        per_variant("results/{dataset}/{variant}/analysis/n2o.parquet"),
    output:
        heatmap=report(
            "results/figures/n2o.png",
            caption="../report/n2o.rst",
            category="Analyses",
        ),
        csv=report(
            "results/tables/n2o_robustness.csv",
            caption="../report/n2o_robustness.rst",
            category="Analyses",
        ),
        md="results/tables/n2o_robustness.md",
    log:
        logged("tables/n2o"),
    benchmark:
        benchmarked("tables/n2o")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "wmdeval n2o-report --inputs {input} --heatmap {output.heatmap} --csv {output.csv}"
        " --md {output.md} 2> {log}"


rule crossmatch:
    input:
        unpack(analysis_inputs),
    output:
        "results/{dataset}/{variant}/analysis/crossmatch.parquet",
    log:
        logged("{dataset}/{variant}/analysis/crossmatch"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/crossmatch")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=120,
    params:
        wmd=wmd_argument,
        m=ANALYSES["crossmatch"]["m"],
        seed=config["report"]["seed"],
    shell:
        "wmdeval crossmatch --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --m {params.m} --seed {params.seed} --out {output} 2> {log}"


rule crossmatch_table:
    input:
        per_variant("results/{dataset}/{variant}/analysis/crossmatch.parquet"),
    output:
        csv=report(
            "results/tables/crossmatch.csv",
            caption="../report/crossmatch.rst",
            category="Analyses",
        ),
        md="results/tables/crossmatch.md",
    log:
        logged("tables/crossmatch"),
    benchmark:
        benchmarked("tables/crossmatch")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "wmdeval crossmatch-table --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


rule corpus_distances:
    input:
        unpack(analysis_inputs),
    output:
        "results/{dataset}/{variant}/analysis/corpus_distances.parquet",
    log:
        logged("{dataset}/{variant}/analysis/corpus_distances"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/corpus_distances")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=60,
    params:
        wmd=wmd_argument,
        m=ANALYSES["corpus_distances"]["m"],
        seed=config["report"]["seed"],
    shell:
        "wmdeval corpus-distances --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --m {params.m} --seed {params.seed} --out {output} 2> {log}"


rule corpus_distance_table:
    input:
        per_variant("results/{dataset}/{variant}/analysis/corpus_distances.parquet"),
    output:
        csv=report(
            "results/tables/corpus_distances.csv",
            caption="../report/corpus_distances.rst",
            category="Analyses",
        ),
        md="results/tables/corpus_distances.md",
    log:
        logged("tables/corpus_distances"),
    benchmark:
        benchmarked("tables/corpus_distances")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "wmdeval corpus-distance-table --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


rule ksc:
    input:
        unpack(analysis_inputs),
    output:
        "results/{dataset}/{variant}/analysis/ksc.parquet",
    log:
        logged("{dataset}/{variant}/analysis/ksc"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/ksc")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=60,
    params:
        wmd=wmd_argument,
        K=ANALYSES["ksc"]["K"],
        R=ANALYSES["ksc"]["R"],
        size=ANALYSES["ksc"]["corpus_size"],
        seed=config["report"]["seed"],
    shell:
        "wmdeval ksc --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --K {params.K} --R {params.R} --corpus-size {params.size} --seed {params.seed}"
        " --out {output} 2> {log}"


# One job draws every KSC figure: matplotlib's start-up would cost each per-variant job
# more than its own work.
rule ksc_report:
    input:
        per_variant("results/{dataset}/{variant}/analysis/ksc.parquet"),
    output:
        figures=[
            report(
                png,
                caption="../report/ksc.rst",
                category="Analyses",
            )
            for png in per_variant("results/figures/ksc_{dataset}_{variant}.png")
        ],
        csv=report(
            "results/tables/ksc.csv",
            caption="../report/ksc_table.rst",
            category="Analyses",
        ),
        md="results/tables/ksc.md",
    log:
        logged("tables/ksc"),
    benchmark:
        benchmarked("tables/ksc")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "wmdeval ksc-report --inputs {input} --figures {output.figures} --csv {output.csv}"
        " --md {output.md} 2> {log}"
