# cmake -DHONE=path/to/hone -DWORKER=path/to/hone-worker [-DWORKBENCH=path/to/hone-workbench]
#       -DOUT=dir -P cli_docs.cmake
# The man pages (gzipped) and the shell completions, written by the binaries themselves
# (app/CMakeLists.txt runs this after building them).
file(MAKE_DIRECTORY ${OUT})
set(jobs "hone.1|${HONE}|--man" "hone.bash|${HONE}|completion|bash" "_hone|${HONE}|completion|zsh"
    "hone-worker.1|${WORKER}|--man")
if(WORKBENCH)
    list(APPEND jobs "hone-workbench.1|${WORKBENCH}|--man")
endif()
find_program(GZIP gzip REQUIRED)
foreach(job IN LISTS jobs)
    string(REPLACE "|" ";" job "${job}")
    list(POP_FRONT job file exe)
    execute_process(COMMAND ${exe} ${job} OUTPUT_FILE ${OUT}/${file}.tmp RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${exe} ${job} failed (${rc})")
    endif()
    if(file MATCHES "\\.1$")
        # -n: no name or time stamp in the header, so the same page gives the same bytes.
        execute_process(COMMAND ${GZIP} -9nf ${OUT}/${file}.tmp RESULT_VARIABLE rc)
        if(NOT rc EQUAL 0)
            message(FATAL_ERROR "gzip ${OUT}/${file}.tmp failed (${rc})")
        endif()
        file(RENAME ${OUT}/${file}.tmp.gz ${OUT}/${file}.gz)
    else()
        file(RENAME ${OUT}/${file}.tmp ${OUT}/${file})
    endif()
endforeach()
