# Beyond the paper: how different are the document distances really?
# Code: workflow/wmdeval/analyses/ (per_variant.py runs the enabled analyses in one job).


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
    params:
        expect=EXPECT_ANALYSIS,
    shell:
        "wmdeval wmd-vs-bow-table --expect {params.expect:q} --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


# N2O, crossmatch, corpus distances, KSC and WMD vs BOW of one dataset variant in one job:
# they share its documents and matrices, read once (wmdeval/analyses/per_variant.py says why).
rule analyses:
    input:
        unpack(analysis_inputs),
    output:
        **analysis_parquets(),
    log:
        logged("{dataset}/{variant}/analysis/analyses"),
    benchmark:
        benchmarked("{dataset}/{variant}/analysis/analyses")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=300,
    params:
        wmd=wmd_argument,
        settings=analysis_settings(),
        outputs=analysis_output_arguments,
        seed=config["report"]["seed"],
    shell:
        "wmdeval analyses --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --dataset {wildcards.dataset} --variant {wildcards.variant}"
        " --settings {params.settings:q} {params.outputs} --seed {params.seed} 2> {log}"


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
    params:
        expect=EXPECT_ANALYSIS,
    shell:
        "wmdeval n2o-report --expect {params.expect:q} --inputs {input} --heatmap {output.heatmap} --csv {output.csv}"
        " --md {output.md} 2> {log}"


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
    params:
        expect=EXPECT_ANALYSIS,
    shell:
        "wmdeval crossmatch-table --expect {params.expect:q} --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


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
    params:
        expect=EXPECT_ANALYSIS,
    shell:
        "wmdeval corpus-distance-table --expect {params.expect:q} --inputs {input} --csv {output.csv} --md {output.md}"
        " 2> {log}"


# One job draws every KSC figure: matplotlib's start-up costs more than a figure.
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
    params:
        expect=EXPECT_ANALYSIS,
    shell:
        "wmdeval ksc-report --expect {params.expect:q} --inputs {input} --figures {output.figures} --csv {output.csv}"
        " --md {output.md} 2> {log}"
