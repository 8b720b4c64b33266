# Sourced by tests/compile_check.sh and tests/optout_check.sh: their
# background jobs each leave $tmp/<i>.res (first line "ok ...", "skip ..."
# or "FAIL ..."); jobs_report prints them in order, removes $tmp, prints
# the summary line tests/run.sh reads, and fails when a job failed.
jobs_report() { # tmp n
    _passed=0 _failed=0 _skipped=0 _i=1
    while [ "$_i" -le "$2" ]; do
        cat "$1/$_i.res"
        case $(head -n 1 "$1/$_i.res") in
            ok*) _passed=$((_passed + 1)) ;; skip*) _skipped=$((_skipped + 1)) ;; *) _failed=$((_failed + 1)) ;;
        esac
        _i=$((_i + 1))
    done
    rm -rf "$1"
    echo "summary passed=$_passed failed=$_failed skipped=$_skipped"
    [ "$_failed" -eq 0 ]
}
