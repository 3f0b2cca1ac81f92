cat <<EOF
{{x}}
EOF
cat <<-'END'
	{{o.k}}
END
echo $(( {{n}} + 1 )); (( {{n}} > 2 )) && let y={{n}}
[[ {{n}} -eq 42 ]]
