echo {{x}} "{{x}}" '{{x}}' $'{{x}}' `echo {{x}}` $(echo "{{x}}")
# {{x}} in a comment
