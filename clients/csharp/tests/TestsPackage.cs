// The package layouts (not the code): what Unity's Package Manager reads from clients/csharp
// (package.json, Runtime/QuantCodec.asmdef, the scripts the asmdef takes, no stray plugin), and
// QuantCodec.csproj's view of the same sources. Unity and the .NET SDK are not on Debian: these
// tests check the files against the rules those tools apply (run-tests also compiles a Unity
// project's Assets/ against the library, as Unity's Assembly-CSharp would be).
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Xml;
using QuantCodec;

static partial class Tests
{
    /// <summary>Whether Unity skips a folder of a package: hidden (".name") or ending in "~".</summary>
    static bool UnitySkips(string dirName) { return dirName.StartsWith(".") || dirName.EndsWith("~"); }

    /// <summary>Every file of the package Unity imports (relative paths, '/' separated, sorted).</summary>
    static List<string> UnityFiles(string dir, string rel)
    {
        var o = new List<string>();
        foreach (var f in Directory.GetFiles(dir))
        {
            string n = Path.GetFileName(f);
            if (n.StartsWith(".") || n.EndsWith("~")) continue;
            o.Add(rel + n);
        }
        foreach (var d in Directory.GetDirectories(dir))
        {
            string n = Path.GetFileName(d);
            if (UnitySkips(n)) continue;
            o.AddRange(UnityFiles(d, rel + n + "/"));
        }
        o.Sort(StringComparer.Ordinal);
        return o;
    }

    static string Str(JsonValue o, string key)
    {
        var v = o == null ? null : o.Get(key);
        return v != null && v.Type == JsonType.String ? v.Text : null;
    }

    static void Package()
    {
        // ---- package.json: the manifest Unity's Package Manager reads at the package's root
        JsonValue pkg = null;
        try { pkg = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "package.json"))); }
        catch (Exception e) { Check(false, "package.json is not strict JSON: " + e.Message); return; }
        Check(pkg.Type == JsonType.Object, "package.json is an object");
        var keys = pkg.Members.Select(m => m.Key).ToList();
        Check(keys.Distinct().Count() == keys.Count, "package.json has no duplicate key");
        string name = Str(pkg, "name");
        // Unity's naming rules: reverse domain, starts with com., lowercase letters, digits, - _ .,
        // at most 50 characters to show in the Editor (214 at all)
        Check(name != null && Regex.IsMatch(name, @"^com\.[a-z0-9_-]+(\.[a-z0-9_-]+)+$") && name.Length <= 50,
            "package.json name follows Unity's naming rules: " + name);
        string version = Str(pkg, "version");
        Check(version != null && Regex.IsMatch(version,
                @"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"),
            "package.json version is SemVer: " + version);
        string unity = Str(pkg, "unity");
        Check(unity != null && Regex.IsMatch(unity, @"^[0-9]{4}\.[0-9]+$"), "package.json unity is <year>.<minor>: " + unity);
        var ur = pkg.Get("unityRelease");
        Check(ur == null || (ur.Type == JsonType.String && Regex.IsMatch(ur.Text, @"^[0-9]+[abfp][0-9]+$")), "unityRelease, if any, is like 0f1");
        Check(!string.IsNullOrEmpty(Str(pkg, "displayName")), "package.json has a displayName");
        Check(!string.IsNullOrEmpty(Str(pkg, "description")), "package.json has a description");
        var deps = pkg.Get("dependencies");
        Check(deps == null || (deps.Type == JsonType.Object && deps.Members.All(m => m.Value.Type == JsonType.String)),
            "dependencies, if any, map names to version strings");
        // the same version everywhere: the Python package (the wire format's reference), the csproj
        var init = File.ReadAllText(Path.Combine(root, "quantcodec", "__init__.py"));
        var pv = Regex.Match(init, "__version__ = \"([^\"]+)\"");
        Check(pv.Success && pv.Groups[1].Value == version, "package.json version " + version + " is quantcodec.__version__ " + pv.Groups[1].Value);

        // ---- what Unity imports from the package folder
        var files = UnityFiles(here, "");
        // exactly one assembly definition, Runtime/'s, and no assembly reference file
        var asmdefs = files.Where(f => f.EndsWith(".asmdef") || f.EndsWith(".asmref")).ToList();
        Check(asmdefs.Count == 1 && asmdefs[0] == "Runtime/QuantCodec.asmdef",
            "one assembly definition, Runtime/QuantCodec.asmdef: " + string.Join(", ", asmdefs));
        // no native or managed plugin Unity would import beside the asmdef's assembly (a built
        // QuantCodec.dll in the folder would be a second assembly of the same name): builds go to build~/
        var plugins = files.Where(f => Regex.IsMatch(f, @"\.(dll|exe|so|dylib|a|bundle|jar|aar|pdb|mdb)$", RegexOptions.IgnoreCase)).ToList();
        Check(plugins.Count == 0, "no plugin file Unity would import: " + string.Join(", ", plugins));
        // no hand-made .meta files: Unity writes them (with their GUIDs) on import
        Check(!files.Any(f => f.EndsWith(".meta")), "no .meta files (Unity generates them)");

        // ---- Runtime/QuantCodec.asmdef
        JsonValue asm = null;
        try { asm = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "Runtime", "QuantCodec.asmdef"))); }
        catch (Exception e) { Check(false, "Runtime/QuantCodec.asmdef is not strict JSON: " + e.Message); return; }
        Check(Str(asm, "name") == "QuantCodec", "the asmdef names the assembly QuantCodec (as the file, the DLL and the namespace)");
        Check(Str(asm, "rootNamespace") == "QuantCodec", "the asmdef's rootNamespace is QuantCodec");
        var ner = asm.Get("noEngineReferences");
        Check(ner != null && ner.Type == JsonType.Bool && ner.BoolValue, "noEngineReferences: true (the library needs no UnityEngine)");
        var ar = asm.Get("autoReferenced");
        Check(ar == null || (ar.Type == JsonType.Bool && ar.BoolValue), "autoReferenced (Assembly-CSharp sees it without a reference)");
        var refs = asm.Get("references");
        Check(refs == null || (refs.Type == JsonType.Array && refs.Items.Count == 0), "the asmdef references no other assembly");
        var unsafeCode = asm.Get("allowUnsafeCode");
        Check(unsafeCode == null || (unsafeCode.Type == JsonType.Bool && !unsafeCode.BoolValue), "no unsafe code");
        foreach (var k in new[] { "includePlatforms", "excludePlatforms", "defineConstraints", "precompiledReferences" })
        {
            var v = asm.Get(k);
            Check(v == null || (v.Type == JsonType.Array && v.Items.Count == 0), "the asmdef's " + k + " is empty (every platform, no condition)");
        }

        // ---- the scripts: those Unity compiles into the asmdef's assembly are those build.sh compiled
        var unityCs = files.Where(f => f.StartsWith("Runtime/") && f.EndsWith(".cs")).ToList();
        var built = File.ReadAllLines(Path.Combine(here, "build~", "QuantCodec.sources"))
            .Where(l => l.Length > 0)
            .Select(l => l.Substring(here.TrimEnd('/').Length + 1).Replace('\\', '/')).ToList();
        built.Sort(StringComparer.Ordinal);
        Check(unityCs.Count > 0 && unityCs.SequenceEqual(built),
            "build.sh compiles exactly the scripts Unity puts in the asmdef's assembly (" + unityCs.Count + " under Runtime/, "
            + built.Count + " built)");
        foreach (var f in unityCs)
        {
            string text = File.ReadAllText(Path.Combine(here, f));
            Check(Regex.IsMatch(text, @"(?m)^namespace QuantCodec(\.|\s|$)"), f + " is in the QuantCodec namespace");
            Check(!Regex.IsMatch(text, @"(?m)^\s*using\s+UnityEngine"), f + " uses no UnityEngine (noEngineReferences)");
        }
        // every other .cs of the folder (tests, bench, tools) has no asmdef: Unity ignores it in a package
        var others = files.Where(f => f.EndsWith(".cs") && !f.StartsWith("Runtime/")).ToList();
        Check(others.All(f => f.StartsWith("tests/") || f.StartsWith("bench/") || f.StartsWith("tools/")),
            "the other scripts are the tests', the bench's and the runner's: " + string.Join(", ", others));

        // ---- QuantCodec.csproj (SDK-style): the same sources, both targets, the same version
        var doc = new XmlDocument();
        doc.Load(Path.Combine(here, "QuantCodec.csproj"));
        var proj = doc.DocumentElement;
        Check(proj.Name == "Project" && proj.GetAttribute("Sdk") == "Microsoft.NET.Sdk", "QuantCodec.csproj is an SDK-style project");
        Func<string, string> prop = n => { var e = proj.SelectSingleNode("PropertyGroup/" + n); return e == null ? null : e.InnerText.Trim(); };
        Check(prop("TargetFrameworks") == "netstandard2.0;netstandard2.1", "the csproj targets netstandard2.0 and netstandard2.1");
        Check(prop("AssemblyName") == "QuantCodec" && prop("RootNamespace") == "QuantCodec", "the csproj builds the QuantCodec assembly");
        Check(prop("Version") == version, "the csproj's version is package.json's");
        Check(prop("EnableDefaultItems") == "false", "the csproj globs only what it names (not tests/, bench/, tools/)");
        var compile = proj.SelectNodes("ItemGroup/Compile").Cast<XmlElement>().ToList();
        Check(compile.Count == 1 && compile[0].GetAttribute("Include") == "Runtime/**/*.cs"
              && compile[0].GetAttribute("Exclude") == "Runtime/**/.*/**;Runtime/**/*~/**",
            "the csproj compiles Runtime/**/*.cs less the folders Unity skips");
        string props = File.ReadAllText(Path.Combine(here, "Directory.Build.props"));
        Check(props.Contains("build~/dotnet/obj/") && props.Contains("build~/dotnet/bin/"),
            "dotnet's bin/ and obj/ go under build~/ (which Unity skips)");
    }
}
